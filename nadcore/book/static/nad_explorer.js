// NAD explorer (nadcore.plots.explorer.nad_explorer, backend="html"): switches precomputed images.
// __ROOT_ID__ is replaced by the id of the explorer's <div> when the fragment is written.
(function () {
  var root = document.getElementById("__ROOT_ID__");
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var d = JSON.parse(root.querySelector(".nadx-data").textContent);
  var arch = root.querySelector(".nadx-arch"), slider = root.querySelector(".nadx-slider");
  var out = root.querySelector(".nadx-index"), panel = root.querySelector(".nadx-holder");
  function show() {
    var a = d.labels[+arch.value], k = +slider.value, row = d.data[a][k];
    var figs = panel.querySelectorAll("figure"), imgs = panel.querySelectorAll("img");
    for (var f = 0; f < figs.length; f++) figs[f].style.display = row[0] ? "" : "none";
    if (row[0]) {
      imgs[0].src = row[0]; imgs[1].src = row[1];
      imgs[0].alt = "NAD " + d.indices[k] + " of " + a + " in pixel space";
      imgs[1].alt = "Fourier energy of NAD " + d.indices[k] + " of " + a;
    }
    panel.querySelector(".nad-explorer-info").innerHTML = row[2];
    out.textContent = d.indices[k];
  }
  function step(s) {
    slider.value = Math.max(0, Math.min(d.indices.length - 1, +slider.value + s)); show();
  }
  arch.addEventListener("change", show);
  slider.addEventListener("input", show);
  root.querySelector(".nadx-prev").addEventListener("click", function () { step(-1); });
  root.querySelector(".nadx-next").addEventListener("click", function () { step(1); });
  show();
})();
