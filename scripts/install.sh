#!/usr/bin/env bash
# One-command install of everything the book needs, on a fresh Debian machine with Python 3.11
# and access to the Debian, PyPI and npm registries only:
#
#     bash scripts/install.sh
#
# 1. Debian packages (APT_PACKAGES below; npm itself if it is missing),
# 2. Python packages: `pip install -r requirements.txt` (skipped when already satisfied),
# 3. the book's offline web assets into book/static/vendor/ (git-ignored, generated):
#    MathJax 3 and the ipywidgets HTML manager + RequireJS, fetched with `npm pack` at pinned
#    versions, so the built HTML makes no CDN request,
# 4. nadcore's optional C kernels (nadcore/kernels/native), compiled for this CPU; where they
#    cannot be built (no C compiler with OpenMP, e.g. Apple's clang) nadcore takes its torch paths,
# 5. the data (the authors' published NADs, CIFAR-10): found locally or fetched from their public
#    sources at a pinned version, checksums checked (scripts/fetch_data.py; the build says what is
#    missing before it runs a chapter).
#
# Idempotent: a second run only checks (a few seconds). Environment knobs:
#   PYTHON=python3.11   interpreter to install into (default: python3)
#   FORCE_VENDOR=1      re-fetch the web assets even if the pinned versions are present
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
t_start=$SECONDS
log() { printf '[install] %s\n' "$*"; }

# --------------------------------------------------------------------------------------------
# 1. Debian (apt) packages. Add system packages here (e.g. `chromium` for headless-browser
#    checks of the rendered book); they are installed only when missing.
# --------------------------------------------------------------------------------------------
# chromium: the headless browser of tests/test_browser.py, driven by the `playwright` pip package
# through executable_path=/usr/bin/chromium (so Playwright never downloads a browser of its own).
APT_PACKAGES=(chromium)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)

apt_missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt_missing+=("$pkg")
done
if ((${#apt_missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "apt-get install ${apt_missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${apt_missing[@]}"
else
    log "apt packages: nothing to install"
fi

# --------------------------------------------------------------------------------------------
# 2. Python packages (pip, not uv/poetry: see ../shared/TOOLCHAIN.md).
# --------------------------------------------------------------------------------------------
if "$PYTHON" -I - requirements.txt <<'EOF'
# Exit 0 if every line of requirements.txt is already satisfied (pip takes ~20 s even as a
# no-op), 1 otherwise. A `-e PATH` line: the project at PATH must be installed editable.
import json, sys, tomllib
from importlib.metadata import distribution, version
from pathlib import Path
try:
    from packaging.requirements import Requirement
    for line in open(sys.argv[1]):
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-e ", "--editable ")):
            path = Path(line.split(None, 1)[1]).resolve()
            name = tomllib.loads((path / "pyproject.toml").read_text())["project"]["name"]
            url = json.loads(distribution(name).read_text("direct_url.json") or "{}")
            if not (url.get("dir_info", {}).get("editable") and url.get("url") == path.as_uri()):
                sys.exit(1)
            continue
        if line.startswith("-"):
            sys.exit(1)  # any other pip option: let pip handle it
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        if not req.specifier.contains(version(req.name), prereleases=True):
            sys.exit(1)
except Exception:
    sys.exit(1)
EOF
then
    log "python packages: requirements.txt already satisfied"
else
    log "pip install -r requirements.txt"
    "$PYTHON" -m pip install --disable-pip-version-check -r requirements.txt
fi

# --------------------------------------------------------------------------------------------
# 3. Offline web assets for the book (served from book/static/vendor/, see _config.yml:
#    sphinx.config.mathjax_path and nb_ipywidgets_js). Not a folder named `_static`: Jupyter
#    Book would then inject every .js file in it into every page.
# --------------------------------------------------------------------------------------------
MATHJAX_VERSION=3.2.2
HTML_MANAGER_VERSION=1.0.15      # @jupyter-widgets/html-manager 1.x renders ipywidgets 8 state
REQUIREJS_VERSION=2.3.8
VENDOR="$ROOT/book/static/vendor"
STAMP="mathjax@$MATHJAX_VERSION html-manager@$HTML_MANAGER_VERSION requirejs@$REQUIREJS_VERSION"

if [ "${FORCE_VENDOR:-0}" != "1" ] && [ -f "$VENDOR/VERSIONS" ] && [ "$(cat "$VENDOR/VERSIONS")" = "$STAMP" ] \
   && [ -f "$VENDOR/mathjax/tex-mml-chtml.js" ] && [ -f "$VENDOR/html-manager/embed-amd.js" ] \
   && [ -f "$VENDOR/requirejs/require.js" ]; then
    log "web assets: $STAMP already in book/static/vendor"
else
    log "web assets: npm pack $STAMP"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "mathjax@$MATHJAX_VERSION" \
        "@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION" "requirejs@$REQUIREJS_VERSION" >/dev/null)
    for tgz in "$tmp"/*.tgz; do
        d="${tgz%.tgz}"; mkdir -p "$d"; tar -xzf "$tgz" -C "$d"
    done
    rm -rf "$VENDOR.new"; mkdir -p "$VENDOR.new/mathjax" "$VENDOR.new/html-manager" "$VENDOR.new/requirejs"
    # MathJax: the browser (es5) build, minus the 4 MB speech-rule engine (only used by the
    # optional accessibility explorer) and the SVG/"full" combined bundles we do not load.
    mj="$tmp/mathjax-$MATHJAX_VERSION/package"
    cp -r "$mj/es5/." "$VENDOR.new/mathjax/"
    rm -rf "$VENDOR.new/mathjax/sre" "$VENDOR.new/mathjax/"*svg*.js "$VENDOR.new/mathjax/"*-full*.js
    cp "$mj/LICENSE" "$VENDOR.new/mathjax/LICENSE"
    # ipywidgets HTML manager: the AMD embed bundle and the fonts it references.
    hm="$tmp/jupyter-widgets-html-manager-$HTML_MANAGER_VERSION/package"
    find "$hm/dist" -maxdepth 1 -type f ! -name '*.map' ! -name 'embed.js' ! -name 'libembed-amd.js' -exec cp {} "$VENDOR.new/html-manager/" \;
    cp "$tmp/requirejs-$REQUIREJS_VERSION/package/require.js" "$VENDOR.new/requirejs/require.js"
    echo "$STAMP" > "$VENDOR.new/VERSIONS"
    rm -rf "$VENDOR"; mv "$VENDOR.new" "$VENDOR"
    log "web assets: installed into book/static/vendor ($(du -sh "$VENDOR" | cut -f1))"
fi

# --------------------------------------------------------------------------------------------
# 4. The optional C kernels (speed only; nadcore works without them). NADCORE_NATIVE=0 skips.
# --------------------------------------------------------------------------------------------
if [ "${NADCORE_NATIVE:-1}" = "0" ]; then
    log "native kernels: skipped (NADCORE_NATIVE=0)"
else
    "$PYTHON" -W ignore -c "from nadcore import kernels; print('[install] kernel path:', kernels.path())"
fi

# --------------------------------------------------------------------------------------------
# 5. The data: the authors' published NADs and the project's CIFAR-10 subset, found where the
#    chapters look (../shared, NADCORE_* variables, ~/.cache/nadcore) or fetched there from their
#    public sources at a pinned version, checksums checked (scripts/fetch_data.py says which).
# --------------------------------------------------------------------------------------------
"$PYTHON" scripts/fetch_data.py

log "done in $((SECONDS - t_start)) s"
