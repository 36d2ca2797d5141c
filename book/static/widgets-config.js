// Tell RequireJS where the ipywidgets HTML manager lives (book/static/vendor/html-manager, served
// as _static/vendor/html-manager). The manager's bundles compute the URL of their own assets (the
// Font Awesome fonts of the widget CSS) from their module URL; without this they look for them
// under <page folder>/@jupyter-widgets/... and the browser logs 404 errors. Loaded between
// require.js and embed-amd.js (see nb_ipywidgets_js in _config.yml).
(function () {
  var base = document.currentScript.src.replace(/[^\/]*$/, "") + "vendor/html-manager";
  window.require.config({
    paths: { "@jupyter-widgets/html-manager/dist": base, "@jupyter-widgets": base }
  });
})();
