#!/usr/bin/env bash
# One GPU lease of the paper campaign (full width, bf16, runs side by side): the jobs of each
# named network and figure in turn (Fig. 1 unless another is named: its diagnostic cells first,
# then its grid), each under its own time budget. It starts from a copy of the committed bundle
# (results/paper), so it skips the jobs done in earlier leases, and leaves the whole bundle in
# $OUT/paper: copy that over results/paper afterwards.  Usage on the device machine:
#     bash scripts/gpu_lease.sh ARCH[/FIGURE]:SECONDS [ARCH[/FIGURE]:SECONDS ...]
#     bash scripts/gpu_lease.sh resnet18:140 densenet121:260 vgg11:150
#     bash scripts/gpu_lease.sh resnet18/fig6:420 resnet18:150
# Fig. 6 trains on the authors' published NADs, which do not travel with the working tree: copy
# them into the ignored folder .lease/nads here (ARCH_NADs.npy, ARCH_eigenvals.npy, SHA256SUMS)
# and carry .lease, or point NADCORE_PUBLISHED_NADS at them there.
# A run that fails within a minute (the side-by-side trainer on this GPU) is retried one run
# after another in float32 (--trainer many).
set -u
export PYTHONUNBUFFERED=1 NADCORE_NATIVE=0
[ -n "${NADCORE_PUBLISHED_NADS:-}" ] || [ ! -d .lease/nads ] || export NADCORE_PUBLISHED_NADS=$PWD/.lease/nads
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/paper"
if [ -f results/paper/provenance.json ]; then
    cp -r results/paper/. "$OUT/paper/" && rm -f "$OUT/paper/README.md"
fi
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
leg() {  # leg ARCH FIGURE SECONDS [extra arguments]
    local arch=$1 fig=$2 secs=$3; shift 3
    local t0=$SECONDS
    timeout "$secs" python3 scripts/run_campaign.py --campaign paper --figures "$fig" --archs "$arch" \
        --budget $((secs - 45)) --cache /tmp/nadcache --out "$OUT/paper" "$@"
    local rc=$?
    echo "== $arch $fig: rc $rc after $((SECONDS - t0)) s"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((SECONDS - t0)) -lt 60 ] && [ $# -eq 0 ]; then
        leg "$arch" "$fig" $((secs - (SECONDS - t0))) --trainer many
    fi
}
[ $# -gt 0 ] || set -- resnet18:280 densenet121:240
for spec in "$@"; do
    name=${spec%%:*}
    case $name in */*) fig=${name#*/} ;; *) fig=fig1 ;; esac
    leg "${name%%/*}" "$fig" "${spec##*:}" 2>&1 | tee -a "$OUT/log.txt"
done
ls -la "$OUT/paper" "$OUT"/paper/*
