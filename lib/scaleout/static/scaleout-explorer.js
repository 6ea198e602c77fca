/* Scale Out: explorers in the static book, with no kernel.
 *
 * Each explorer's output (scaleout.widgets.Explorer.static_html) holds a JSON script with
 * its controls and the figure precomputed in Python for every combination of their values,
 * packed so that repeated values are stored once ({"#": i} refers to pool[i]). This
 * script draws native, labelled controls (range inputs for sliders, selects otherwise;
 * both usable by keyboard) and redraws the figure with Plotly.react on every change.
 * It loads nothing: everything it needs is in the page.
 */
(function () {
  "use strict";
  var REF = "#";
  var NO_PLOTLY = "This explorer needs plotly.js, which this page did not load.";

  function resolve(node, pool) {
    if (Array.isArray(node)) {
      return node.map(function (v) { return resolve(v, pool); });
    }
    if (node !== null && typeof node === "object") {
      var keys = Object.keys(node);
      if (keys.length === 1 && keys[0] === REF) {
        return resolve(pool[node[REF]], pool);
      }
      var out = {};
      keys.forEach(function (k) { out[k] = resolve(node[k], pool); });
      return out;
    }
    return node;
  }

  function init(root) {
    if (root.dataset.ready) { return; }
    root.dataset.ready = "1";
    var name = root.dataset.explorer;
    var data = JSON.parse(root.querySelector("script.scaleout-explorer-data").textContent);
    var fig = root.querySelector(".scaleout-figure");
    var bar = root.querySelector(".scaleout-explorer-controls");
    var index = data.controls.map(function (c) { return c.initial; });

    function state() {
      var i = 0;
      data.controls.forEach(function (c, k) { i = i * c.options.length + index[k]; });
      return i;
    }

    function draw() {
      if (!window.Plotly) { fig.textContent = NO_PLOTLY; return Promise.resolve(); }
      var i = state();
      var t0 = window.performance.now();
      var spec = resolve(data.states[i], data.pool);
      var layout = spec.layout || {};
      fig.style.height = (layout.height || data.height || 450) + "px";
      return window.Plotly.react(fig, spec.data || [], layout, data.config).then(function () {
        fig.dataset.state = String(i);
        fig.dataset.drawMs = (window.performance.now() - t0).toFixed(1);
        root.dispatchEvent(new CustomEvent("scaleout:drawn", { detail: { state: i } }));
      });
    }

    data.controls.forEach(function (c, k) {
      var id = name + "-control-" + k;
      var wrap = document.createElement("div");
      wrap.className = "scaleout-control";
      var label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = c.label;
      wrap.appendChild(label);
      var input;
      if (c.widget === "range") {
        input = document.createElement("input");
        input.type = "range";
        input.min = "0";
        input.max = String(c.options.length - 1);
        input.step = "1";
        input.value = String(c.initial);
        var readout = document.createElement("output");
        readout.htmlFor = id;
        readout.textContent = c.options[c.initial];
        input.setAttribute("aria-valuetext", c.options[c.initial]);
        input.addEventListener("input", function () {
          index[k] = Number(input.value);
          readout.textContent = c.options[index[k]];
          input.setAttribute("aria-valuetext", c.options[index[k]]);
          draw();
        });
        wrap.appendChild(input);
        wrap.appendChild(readout);
      } else {
        input = document.createElement("select");
        c.options.forEach(function (text, i) {
          var option = document.createElement("option");
          option.value = String(i);
          option.textContent = text;
          input.appendChild(option);
        });
        input.value = String(c.initial);
        input.disabled = c.options.length < 2;
        input.addEventListener("change", function () {
          index[k] = Number(input.value);
          draw();
        });
        wrap.appendChild(input);
      }
      input.id = id;
      input.className = "scaleout-control-input";
      input.dataset.key = c.key;
      bar.appendChild(wrap);
    });
    draw();
  }

  function initAll() {
    document.querySelectorAll(".scaleout-explorer[data-explorer]").forEach(init);
  }

  window.ScaleoutExplorer = { init: init, initAll: initAll, resolve: resolve };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", initAll);
  } else {
    initAll();
  }
})();
