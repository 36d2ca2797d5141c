"""Small Sphinx fixes for the NAD book's HTML (loaded through `sphinx: local_extensions` in
_config.yml). Each one removes a browser console error that tests/test_browser.py would report.

* Sphinx 7.4 adds a JavaScript snippet registered after ``Builder.init()`` twice: once with the
  file name ``None`` (``app.add_js_file`` during the read phase) and once with ``''``
  (``prepare_writing``), which compare unequal. sphinx-thebe's ``const THEBE_JS_URL = ...``
  snippet then runs twice and throws "Identifier 'THEBE_JS_URL' has already been declared" on every
  page. We drop the second copy of any identical script when a page is rendered.
"""

from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, keep = set(), []
    for js in scripts:
        key = (
            getattr(js, "filename", str(js)) or "",
            tuple(sorted((k, str(v)) for k, v in getattr(js, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            keep.append(js)
    scripts[:] = keep


def setup(app):
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
