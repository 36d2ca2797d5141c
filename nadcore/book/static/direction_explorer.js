// Direction explorer (nadcore.plots.explorer.direction_explorer): hovering, clicking or focusing a cell
// of an accuracy map shows that direction, its Fourier energy and every architecture's accuracy.
// __ROOT_ID__ is replaced by the id of the explorer's <div> when the fragment is written.
(function () {
  var root = document.getElementById("__ROOT_ID__");
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var d = JSON.parse(root.querySelector(".dirx-data").textContent);
  var imgs = root.querySelectorAll(".dirx-detail img"), info = root.querySelector(".dirx-info");
  var current = null;
  function pct(x) { return x === null ? "not measured" : (100 * x).toFixed(1) + "%"; }
  function show(c, a) {
    imgs[0].src = d.dir[c]; imgs[1].src = d.fou[c];
    imgs[0].alt = "direction " + d.labels[c]; imgs[1].alt = "Fourier energy of " + d.labels[c];
    var html = "<b>" + d.labels[c] + "</b>";
    for (var k = 0; k < d.archs.length; k++) {
      var s = d.archs[k] + ": " + pct(d.acc[k][c]);
      html += "<br>" + (k === a ? "<b>" + s + "</b>" : s);
    }
    info.innerHTML = html;
    if (current) current.forEach(function (el) { el.style.outline = ""; });
    current = root.querySelectorAll('.dirx-cell[data-c="' + c + '"]');
    current.forEach(function (el) { el.style.outline = "2px solid #d62728"; });
  }
  function handler(ev) {
    var t = ev.target.closest ? ev.target.closest(".dirx-cell") : null;
    if (t) show(+t.dataset.c, +t.dataset.a);
  }
  root.addEventListener("mouseover", handler);
  root.addEventListener("click", handler);
  root.addEventListener("focusin", handler);
  show(d.first, 0);
})();
