/* Scale Out: the book on every screen (phones, dark mode, print, keyboard).
 *
 * Loaded on every page, in <head> right after plotly.js, so that it sees every figure before
 * it is drawn. It changes nothing stored in the notebooks: the figure JSON stays as computed;
 * what changes is how it is laid out for the reader's screen at draw time.
 *
 * - Figures: every Plotly.newPlot / Plotly.react goes through adapt(), which wraps long titles
 *   to the figure's width (the mode bar keeps its own corner, shown on hover only, and none on
 *   a phone, where a finger has no hover), turns on automargin, moves legends that sit over
 *   the plotting area out of it (right of it on a wide screen, below it on a narrow one),
 *   labels log axes with their magnitudes, and below 600 px uses larger text and fewer ticks.
 *   Text labels too small for their bar or cell are hidden, never shrunk under 9 px.
 *   Code identifiers that reached a legend or a control are shown by their human names.
 * - Dark mode: figures are drawn on the page's dark paper with light text, grid and axis
 *   lines, and redrawn when the reader switches the theme.
 * - Print: figures are scaled to the page width before printing.
 * - Keyboard: the mode bar leaves the tab order; a row of figure-switching buttons
 *   (role="radiogroup") is one tab stop, moved through with the arrow keys.
 * - Wide formulas and tables scroll sideways, with a visible hint.
 * - Explorer notes: placed below their figure, saying what the page holds and what the live
 *   explorer adds.
 */
(function () {
  "use strict";
  var NARROW_PX = 600;
  var PRINT_PX = 700; // A4 less the print stylesheet's margins, in CSS pixels
  var MIN_FONT_PX = 9;
  var MODEBAR_PX = 130; // the trimmed mode bar's width, kept free beside the title
  // Identifiers of the library that reach a legend, a title or a control, and the names a
  // reader knows them by (the identifiers stay in the code and in the figure JSON).
  var HUMAN = {
    "nvlink1-p100": "NVLink 1 (P100)", "nvlink2-v100": "NVLink 2 (V100)",
    "nvlink3-a100": "NVLink 3 (A100)", "nvlink4-h100": "NVLink 4 (H100)",
    "nvlink5-b200": "NVLink 5 (B200)", "dgx-a100": "DGX A100", "dgx-h100": "DGX H100",
    "dgx-b200": "DGX B200", "dgx-gb200": "DGX GB200", "hgx-h100-4nic": "HGX H100, 4 NICs",
    "nic-100g": "100 Gb/s NIC", "nic-200g": "200 Gb/s NIC", "nic-400g": "400 Gb/s NIC",
    "pcie": "PCIe", "rabenseifner": "Rabenseifner", "zb-h1": "ZB-H1", "zb-h2": "ZB-H2",
    "1f1b": "1F1B", "gpipe": "GPipe", "allreduce": "all-reduce", "allgather": "all-gather",
    "reducescatter": "reduce-scatter", "alltoall": "all-to-all", "megatron": "Megatron-LM"
  };
  var IDENTIFIER = /\b(nvlink[1-5]-[a-z]+\d+|[dh]gx-[a-z0-9-]*\d[a-z0-9]*|nic-\d+g|zb-h[12])\b/g;
  var SUBSCRIPT = /(^|[^A-Za-z0-9_])([A-Za-z])_([a-z])(?![A-Za-z0-9_])/g;

  // The reader's name for `text` (plotly's markup: <sub> for subscripts).
  function human(text) {
    if (typeof text !== "string") { return text; }
    var key = text.trim();
    if (Object.prototype.hasOwnProperty.call(HUMAN, key)) { return HUMAN[key]; }
    return text.replace(IDENTIFIER, function (m) { return HUMAN[m] || m; })
      .replace(SUBSCRIPT, function (m, pre, a, b) { return pre + a + "<sub>" + b + "</sub>"; });
  }

  function clone(x) { return x === undefined ? x : JSON.parse(JSON.stringify(x)); }

  function textWidth(text, size) {
    // A plain estimate (no layout yet): proportional sans-serif, about 0.56 em per character.
    return text.replace(/<[^>]*>/g, "").length * size * 0.56;
  }

  // Wraps plotly's "HTML" text (<br>, and <sub>, <sup>, <b>, <i> that may span lines) into
  // lines of at most `width` pixels, breaking at spaces outside tags. Every line comes out
  // balanced: a tag open at a break is closed there and reopened on the next line.
  function wrap(text, width, size) {
    var pieces = [];
    String(text).split(/<br\s*\/?>/i).forEach(function (line) {
      var words = line.split(/ +(?![^<]*>)/), cur = "";
      var small = /^\s*<su[bp]>/.test(line);
      var px = small ? size * 0.75 : size;
      words.forEach(function (w) {
        var next = cur ? cur + " " + w : w;
        if (cur && textWidth(next, px) > width) { pieces.push(cur); cur = w; } else { cur = next; }
      });
      pieces.push(cur);
    });
    var open = [];
    return pieces.map(function (l) {
      var prefix = open.map(function (t) { return "<" + t + ">"; }).join("");
      var re = /<(\/?)([a-z]+)[^>]*>/gi, m;
      while ((m = re.exec(l)) !== null) {
        if (m[1]) {
          var at = open.lastIndexOf(m[2].toLowerCase());
          if (at >= 0) { open.splice(at, 1); }
        } else { open.push(m[2].toLowerCase()); }
      }
      var suffix = open.slice().reverse().map(function (t) { return "</" + t + ">"; }).join("");
      return (prefix + l + suffix).replace(/<(su[bp])><\/\1>/g, "");
    }).filter(function (l) { return l.replace(/<[^>]*>/g, "").trim() !== ""; });
  }

  function titleText(t) { return typeof t === "string" ? t : (t && t.text) || ""; }

  function axisKeys(layout) {
    return Object.keys(layout).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  }

  function legendInside(legend) {
    var x = legend.x, y = legend.y;
    if (x === undefined && y === undefined) { return false; } // plotly's default: right of the plot
    x = x === undefined ? 1.02 : x;
    y = y === undefined ? 1 : y;
    return x >= 0 && x <= 1 && y >= 0 && y <= 1 && legend.xref !== "container" &&
      legend.yref !== "container";
  }

  function legendNames(data) {
    var groups = {}, names = [];
    data.forEach(function (t) {
      if (t.showlegend === false || (t.showlegend === undefined && data.length < 2)) { return; }
      if (t.legendgroup) {
        if (groups[t.legendgroup]) { return; }
        groups[t.legendgroup] = true;
      }
      names.push(String(t.name || ""));
    });
    return names;
  }

  function countLegendItems(data) {
    var groups = {};
    var n = 0;
    data.forEach(function (t) {
      if (t.showlegend === false || (t.showlegend === undefined && data.length < 2)) { return; }
      if (t.legendgroup) {
        if (groups[t.legendgroup]) { return; }
        groups[t.legendgroup] = true;
      }
      n += 1;
    });
    return n;
  }

  // Dark mode (html[data-theme=dark], the theme's switch or the OS preference): the figure's
  // paper, grid, axis lines and text take the page's dark colours; text and lines that were
  // drawn dark for a white paper turn light, light fills turn dark. Text on a coloured bar or
  // cell keeps its colour (it was chosen for that colour). Every text reaches 4.5:1 or more.
  var DARK = {
    paper: "#14181e", text: "#e3e6ea", grid: "#343a42", line: "#9aa1aa",
    legend: "rgba(20,24,30,0.85)", idle: "#3d434b", button: "#2a3038", border: "#6b737d"
  };
  function isDark() { return document.documentElement.getAttribute("data-theme") === "dark"; }
  var NAMED = { black: [0, 0, 0], white: [255, 255, 255], gray: [128, 128, 128],
    grey: [128, 128, 128], darkgray: [169, 169, 169], darkgrey: [169, 169, 169],
    dimgray: [105, 105, 105], lightgray: [211, 211, 211], lightgrey: [211, 211, 211],
    whitesmoke: [245, 245, 245], gainsboro: [220, 220, 220], silver: [192, 192, 192] };
  function parseColor(c) {
    if (typeof c !== "string") { return null; }
    var s = c.trim().toLowerCase(), m;
    if (NAMED[s]) { return NAMED[s].concat([1]); }
    if ((m = /^#([0-9a-f]{3,8})$/.exec(s))) {
      var h = m[1];
      if (h.length === 3 || h.length === 4) { h = h.split("").map(function (x) { return x + x; }).join(""); }
      return [parseInt(h.slice(0, 2), 16), parseInt(h.slice(2, 4), 16), parseInt(h.slice(4, 6), 16),
        h.length === 8 ? parseInt(h.slice(6, 8), 16) / 255 : 1];
    }
    if ((m = /^rgba?\(([^)]+)\)$/.exec(s))) {
      var v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
    }
    return null;
  }
  function luminance(rgb) {
    var f = function (x) { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
  }
  // A colour drawn for a white paper, as it is drawn on the dark one.
  function ink(c, fallback) {
    var rgb = parseColor(c);
    if (!rgb) { return c === undefined ? fallback : c; }
    return luminance(rgb) < 0.18 ? (fallback || DARK.text) : c;
  }
  function fill(c) {
    var rgb = parseColor(c);
    if (!rgb || rgb[3] === 0) { return c; }
    return luminance(rgb) > 0.6 ? (rgb[3] < 1 ? "rgba(20,24,30," + rgb[3] + ")" : DARK.paper) : c;
  }
  function inkFont(font, fallback) {
    font = Object.assign({}, font || {});
    font.color = ink(font.color, fallback || DARK.text);
    return font;
  }
  function darkLayout(layout, data) {
    layout.paper_bgcolor = DARK.paper;
    layout.plot_bgcolor = DARK.paper;
    layout.font = inkFont(layout.font);
    if (layout.title && typeof layout.title === "object") {
      layout.title = Object.assign({}, layout.title, { font: inkFont(layout.title.font) });
    }
    Object.keys(layout).filter(function (k) { return /^[xy]axis\d*$/.test(k); }).forEach(function (k) {
      var ax = layout[k] = Object.assign({}, layout[k]);
      ax.gridcolor = DARK.grid;
      ax.zerolinecolor = DARK.line;
      ax.linecolor = ink(ax.linecolor, DARK.line);
      ax.tickcolor = ink(ax.tickcolor, DARK.line);
      ax.tickfont = inkFont(ax.tickfont);
      if (ax.title && typeof ax.title === "object") {
        ax.title = Object.assign({}, ax.title, { font: inkFont(ax.title.font) });
      }
    });
    var legend = layout.legend = Object.assign({}, layout.legend || {});
    legend.bgcolor = DARK.legend;
    legend.font = inkFont(legend.font);
    if (legend.bordercolor) { legend.bordercolor = ink(legend.bordercolor, DARK.border); }
    if (layout.coloraxis && layout.coloraxis.colorbar) {
      layout.coloraxis = Object.assign({}, layout.coloraxis);
      layout.coloraxis.colorbar = Object.assign({}, layout.coloraxis.colorbar,
        { tickfont: inkFont(layout.coloraxis.colorbar.tickfont) });
    }
    (layout.annotations || []).forEach(function (a) {
      a.font = inkFont(a.font);
      if (a.arrowcolor) { a.arrowcolor = ink(a.arrowcolor, DARK.text); }
      if (a.bgcolor) { a.bgcolor = fill(a.bgcolor); }
      if (a.bordercolor) { a.bordercolor = ink(a.bordercolor, DARK.border); }
    });
    (layout.shapes || []).forEach(function (sh) {
      if (sh.line && sh.line.color) { sh.line = Object.assign({}, sh.line, { color: ink(sh.line.color, DARK.line) }); }
      if (sh.fillcolor) { sh.fillcolor = fill(sh.fillcolor); }
    });
    (layout.sliders || []).concat(layout.updatemenus || []).forEach(function (s) {
      s.font = inkFont(s.font);
      s.bgcolor = DARK.button;
      s.bordercolor = DARK.border;
      if (s.activebgcolor !== undefined || s.steps) { s.activebgcolor = "#56B4E9"; }
      if (s.currentvalue) { s.currentvalue = Object.assign({}, s.currentvalue, { font: inkFont(s.currentvalue.font) }); }
      if (s.tickcolor !== undefined || s.steps) { s.tickcolor = DARK.line; }
    });
    data.forEach(function (t) {
      // Lines and markers drawn black (the last rank colour, outlines) turn light.
      ["line", "marker"].forEach(function (part) {
        if (t[part] && typeof t[part].color === "string") {
          t[part] = Object.assign({}, t[part], { color: ink(t[part].color, DARK.text) });
          var mc = parseColor(t[part].color);
          // A pale grey fill (idle, empty) would glare on the dark paper: a dark grey instead.
          if (part === "marker" && mc && luminance(mc) > 0.7 &&
            Math.max(mc[0], mc[1], mc[2]) - Math.min(mc[0], mc[1], mc[2]) < 16) {
            t[part].color = DARK.idle;
          }
        }
        if (t[part] && t[part].line && typeof t[part].line.color === "string") {
          var lc = parseColor(t[part].line.color);
          // White outlines separate bars and cells on white: the dark paper separates them now.
          var c = lc && luminance(lc) > 0.6 ? DARK.paper : ink(t[part].line.color, DARK.text);
          t[part] = Object.assign({}, t[part], { line: Object.assign({}, t[part].line, { color: c }) });
        }
      });
      var outside = t.type !== "bar" && t.type !== "heatmap" && t.type !== "histogram" ||
        t.textposition === "outside";
      if (outside && t.textfont && typeof t.textfont.color === "string") {
        t.textfont = inkFont(t.textfont);
      } else if (outside && t.textfont === undefined && t.type === "scatter") {
        t.textfont = { color: DARK.text };
      }
      if (t.colorbar) {
        t.colorbar = Object.assign({}, t.colorbar, { tickfont: inkFont(t.colorbar.tickfont) });
      }
    });
  }

  // The layout (and config) a figure is drawn with on this screen.
  function adapt(gd, data, layout, config) {
    var width = gd.clientWidth || (gd.parentElement && gd.parentElement.clientWidth) || 800;
    var narrow = width < NARROW_PX;
    data = (data || []).map(function (t) {
      var u = Object.assign({}, t);
      if (typeof u.name === "string") { u.name = human(u.name); }
      if (narrow && (u.type === "bar" || u.type === "histogram") && u.text !== undefined &&
        !u.textfont) {
        u.textfont = { size: 11 };
      }
      return u;
    });
    layout = clone(layout) || {};
    config = Object.assign({}, config || {}, {
      displaylogo: false,
      displayModeBar: narrow ? false : "hover",
      modeBarButtonsToRemove: ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"]
    });
    var font = layout.font || {};
    var base = font.size || 13;
    if (narrow) {
      base = Math.max(base, 13);
      layout.font = Object.assign({}, font, { size: base });
    }
    // Labels too small for their bar are hidden, not shrunk (plotly's uniformtext).
    layout.uniformtext = Object.assign({ mode: "hide", minsize: narrow ? 11 : MIN_FONT_PX },
      layout.uniformtext || {});
    var margin = Object.assign({ l: 60, r: 20, t: 50, b: 50 }, layout.margin || {});
    var height0 = layout.height || 450, top0 = margin.t;
    gd.__plotHeight = height0 - margin.t - margin.b; // what the plot itself had, kept
    if (narrow) {
      margin.l = Math.min(margin.l, 48);
      margin.r = Math.min(margin.r, 12);
    }
    layout.margin = margin;
    // Title: wrapped to the width left of the mode bar's corner, pushed into the margin.
    var text = human(titleText(layout.title));
    if (text) {
      var title = typeof layout.title === "string" ? { text: text } : layout.title;
      var tsize = (title.font && title.font.size) || 15;
      if (narrow) { tsize = Math.max(14, Math.min(tsize, 15)); }
      var room = width - 20 - (narrow ? 0 : MODEBAR_PX);
      var lines = wrap(text, room, tsize);
      title.text = lines.join("<br>");
      title.font = Object.assign({}, title.font || {}, { size: tsize });
      title.x = 0; title.xref = "container"; title.xanchor = "left";
      title.y = 1; title.yref = "container"; title.yanchor = "top";
      title.pad = Object.assign({ l: 10, t: 8 }, title.pad || {});
      title.automargin = true;
      layout.title = title;
      var height = lines.length * tsize * 1.25 + 16;
      margin.t = Math.max(margin.t, Math.ceil(height + (narrow ? 4 : 10)));
    } else if (!narrow) {
      margin.t = Math.max(margin.t, 34); // the mode bar's strip, above the plot
    }
    if (narrow && margin.t > top0) {
      // The plot keeps its height: the figure grows by the lines the title gained.
      layout.height = height0 + (margin.t - top0);
    }
    // Axes: automargin, wrapped titles, log ticks with magnitudes, fewer ticks on a phone.
    axisKeys(layout).forEach(function (k) {
      var ax = layout[k] = Object.assign({}, layout[k]);
      ax.automargin = true;
      var at = human(titleText(ax.title));
      if (at) {
        var axTitle = typeof ax.title === "string" ? { text: at } : Object.assign({}, ax.title);
        var asize = (axTitle.font && axTitle.font.size) || base;
        var span = k[0] === "x" ? width - margin.l - margin.r : (layout.height || 450) - margin.t - margin.b;
        axTitle.text = wrap(at, Math.max(span, 120), asize).join("<br>");
        ax.title = axTitle;
      }
      if (ax.type === "log" && !ax.tickformat && ax.tickvals === undefined && ax.dtick === undefined) {
        ax.tickformat = "~s"; // "20k", "50k": never a bare "2" or "5" between decades
      }
      if (narrow && ax.tickvals === undefined && ax.dtick === undefined && ax.type !== "category") {
        ax.nticks = Math.min(ax.nticks || 6, 6);
      }
      if (ax.tickfont && ax.tickfont.size && ax.tickfont.size < MIN_FONT_PX + (narrow ? 2 : 0)) {
        ax.tickfont = Object.assign({}, ax.tickfont, { size: MIN_FONT_PX + (narrow ? 2 : 0) });
      }
      if (ax.title && typeof ax.title === "object") {
        ax.title.font = Object.assign({}, ax.title.font || {});
      }
    });
    // Legends: never over the plotting area; below it on a narrow screen.
    var items = countLegendItems(data);
    if (layout.showlegend !== false && items > 0) {
      var legend = Object.assign({}, layout.legend || {});
      var hasSlider = (layout.sliders && layout.sliders.length) ||
        (layout.updatemenus && layout.updatemenus.length);
      var below = narrow || (legendInside(legend) && width < 760);
      if (below) {
        // One item a line (plotly does not wrap a horizontal legend at a container's width),
        // long names wrapped: nothing leaves the figure.
        var lsize = (legend.font && legend.font.size) || base, lines = 0;
        var room = width - 90;
        data.forEach(function (t) {
          if (typeof t.name === "string" && t.showlegend !== false) {
            t.name = wrap(t.name, room, lsize).join("<br>");
          }
        });
        legendNames(data).forEach(function (name) { lines += name.split("<br>").length; });
        // Horizontal (so that plotly takes no side margin for it), one full-width entry a row.
        legend.orientation = "h";
        legend.entrywidthmode = "pixels";
        legend.entrywidth = width - 60;
        legend.x = 0; legend.xanchor = "left"; legend.xref = "container";
        legend.y = 0; legend.yanchor = "bottom"; legend.yref = "container";
        legend.bgcolor = "rgba(0,0,0,0)";
        var extra = lines * Math.ceil(lsize * 1.45) + 12 +
          (legend.title && titleText(legend.title) ? 22 : 0);
        margin.b = margin.b + extra;
        layout.height = (layout.height || 450) + extra;
      } else if (legendInside(legend)) {
        legend.x = 1.02; legend.xanchor = "left"; legend.y = 1; legend.yanchor = "top";
        legend.xref = "paper"; legend.yref = "paper";
      }
      if (legend.title && typeof legend.title === "object" && legend.title.text) {
        legend.title = Object.assign({}, legend.title, { text: human(legend.title.text) });
      }
      layout.legend = legend;
    }
    // Heatmap cell text: hidden where a cell is too small to hold it at a readable size.
    data.forEach(function (t) {
      if (t.type !== "heatmap" || (!t.texttemplate && !t.text)) { return; }
      var cols = (t.z && t.z[0] && t.z[0].length) || 1;
      var rowsN = (t.z && t.z.length) || 1;
      var cellW = (width - margin.l - margin.r) / cols;
      var cellH = ((layout.height || 450) - margin.t - margin.b) / rowsN;
      var size = (t.textfont && t.textfont.size) || Math.min(12, base);
      if (cellH < MIN_FONT_PX + 3 || cellW < size * 2.2) {
        t.texttemplate = ""; t.text = undefined;
        gd.dataset.cellTextHidden = "1";
      } else {
        t.textfont = Object.assign({}, t.textfont || {}, { size: Math.max(size, MIN_FONT_PX + 1) });
      }
    });
    // Annotations and sliders keep a readable size.
    (layout.annotations || []).forEach(function (a) {
      if (a.font && a.font.size && a.font.size < MIN_FONT_PX) { a.font.size = MIN_FONT_PX; }
      if (typeof a.text === "string") { a.text = human(a.text); }
    });
    (layout.sliders || []).forEach(function (s) {
      if (narrow) { s.font = Object.assign({}, s.font || {}, { size: Math.max(11, (s.font && s.font.size) || 11) }); }
    });
    if (isDark()) { darkLayout(layout, data); }
    gd.dataset.theme = isDark() ? "dark" : "light";
    if ((layout.height || 450) !== height0 || gd.style.height !== (layout.height || 450) + "px") {
      layout.height = layout.height || height0;
      gd.style.height = layout.height + "px";
    }
    return { data: data, layout: layout, config: config, narrow: narrow };
  }

  // After drawing, measured rather than estimated: the title starts inside the figure and ends
  // above the plot; a legend below the plot starts under the x axis' labels and title.
  function fixup(gd, tries) {
    var full = gd._fullLayout;
    var svg = gd.querySelector(".main-svg");
    if (!full || !svg || tries <= 0) { return Promise.resolve(gd); }
    var box = svg.getBoundingClientRect();
    var H = full.height, size = full._size, update = {}, changed = false;
    var title = gd.querySelector(".g-gtitle");
    var t = title && title.getBoundingClientRect();
    if (t && t.height > 0) {
      var top = t.top - box.top, bottom = t.bottom - box.top;
      if (top < 2) {
        var y = (typeof full.title.y === "number" ? full.title.y : 1) - (2 - top) / H;
        update["title.y"] = y;
        bottom += 2 - top;
        changed = true;
      }
      if (bottom + 6 > size.t) {
        update["margin.t"] = Math.ceil(bottom + 6);
        changed = true;
      }
    }
    // Axis titles: re-wrapped with their measured width when one leaves the figure.
    gd.querySelectorAll("g[class$='title']").forEach(function (g) {
      var m = /^g-([xy]\d*)title$/.exec(g.getAttribute("class") || "");
      if (!m) { return; }
      var r = g.getBoundingClientRect();
      if (r.width === 0 || (r.left >= box.left - 1 && r.right <= box.right + 1 &&
        r.top >= box.top - 1 && r.bottom <= box.bottom + 1)) { return; }
      var name = m[1][0] + "axis" + m[1].slice(1);
      var ax = full[name];
      if (!ax || !ax.title || !ax.title.text) { return; }
      var text = ax.title.text.replace(/<br>/g, " ");
      var chars = text.replace(/<[^>]*>/g, "").length || 1;
      var lines = ax.title.text.split("<br>").length;
      var perChar = (m[1][0] === "x" ? r.width : r.height) * lines / chars;
      var centre = m[1][0] === "x" ? (r.left + r.right) / 2 - box.left : (r.top + r.bottom) / 2 - box.top;
      var extent = m[1][0] === "x" ? box.width : box.height;
      var room = 2 * Math.min(centre, extent - centre) - 8;
      var size = perChar / 0.56; // the size textWidth() would need to give this width
      update[name + ".title.text"] = wrap(text, Math.max(room, 40), size).join("<br>");
      changed = true;
    });
    var legend = gd.querySelector(".legend");
    var lg = full.legend;
    if (legend && lg && lg.yref === "container" && lg.y === 0) {
      var l = legend.getBoundingClientRect();
      var lowest = size.t + size.h;
      gd.querySelectorAll(".xtick text, .g-xtitle text, .slider-container, .updatemenu-container")
        .forEach(function (el) {
          var r = el.getBoundingClientRect();
          if (r.height > 0 && r.width > 0) { lowest = Math.max(lowest, r.bottom - box.top); }
        });
      var overlap = lowest + 6 - (l.top - box.top);
      if (overlap > 0) {
        update["margin.b"] = Math.ceil(size.b + overlap);
        update.height = Math.ceil(H + overlap);
        changed = true;
      }
    } else if (legend && lg && lg.yref !== "container" && lg.y < 0 && size.h > 0) {
      // A legend the figure placed below its plot (paper y < 0): moved down, and the figure
      // grown by as much, where the x axis' labels or title, or a slider, reach into it.
      var lb = legend.getBoundingClientRect();
      var low = size.t + size.h;
      gd.querySelectorAll(".xtick text, .g-xtitle text, .slider-container, .updatemenu-container")
        .forEach(function (el) {
        var r = el.getBoundingClientRect();
        if (r.height > 0 && r.width > 0 && r.left < lb.right && lb.left < r.right &&
          r.top < lb.bottom) {
          low = Math.max(low, r.bottom - box.top);
        }
      });
      var over = low + 6 - (lb.top - box.top);
      if (over > 0) {
        update["legend.y"] = lg.y - over / size.h;
        update["margin.b"] = Math.ceil(size.b + over);
        update.height = Math.ceil(H + over);
        changed = true;
      }
    }
    var t2 = update["margin.t"] || size.t, b2 = update["margin.b"] || size.b;
    var h2 = update.height || H;
    if (h2 - t2 - b2 < 120) { // never squeeze the plot itself away
      update.height = Math.ceil(t2 + b2 + 120);
      changed = true;
    }
    if (gd.dataset.narrow === "1" && gd.__plotHeight > 0) {
      var want = Math.min(gd.__plotHeight, 600) - size.h - (update["margin.t"] ? update["margin.t"] - size.t : 0);
      if (want > 4) {
        update.height = Math.ceil((update.height || H) + want);
        changed = true;
      }
    }
    if (!changed) { return Promise.resolve(gd); }
    if (update.height) { gd.style.height = update.height + "px"; }
    if (update["margin.t"] && !update.height && gd.dataset.narrow === "1") {
      update.height = Math.ceil(H + update["margin.t"] - size.t);
      gd.style.height = update.height + "px";
    }
    return window.Plotly.relayout(gd, update).then(function () { return fixup(gd, tries - 1); });
  }

  function afterDraw(gd) {
    // The mode bar's buttons: reachable with a pointer, never a tab stop.
    gd.querySelectorAll(".modebar-btn, .modebar a, .modebar button").forEach(function (b) {
      b.setAttribute("tabindex", "-1");
    });
    gd.dataset.screenWidth = String(gd.clientWidth);
    gd.dataset.laidOut = "1"; // the tests wait for this
    return gd;
  }

  function hook(Plotly) {
    if (!Plotly || Plotly.__scaleoutScreens) { return; }
    Plotly.__scaleoutScreens = true;
    ["newPlot", "react"].forEach(function (fn) {
      var original = Plotly[fn];
      Plotly[fn] = function (gd, data, layout, config) {
        if (typeof gd === "string") { gd = document.getElementById(gd); }
        if (!gd || Array.isArray(gd) || (data && !Array.isArray(data))) {
          return original.apply(this, arguments);
        }
        gd.__scaleoutSpec = { data: data, layout: layout, config: config };
        gd.dataset.laidOut = ""; // until this draw is done
        var a = adapt(gd, data, layout, config);
        gd.dataset.narrow = a.narrow ? "1" : "0";
        return original.call(this, gd, a.data, a.layout, a.config)
          .then(function (g) { return fixup(g, 4); })
          .then(afterDraw);
      };
    });
  }

  // plotly.js is loaded just before this script; hook it now (and if it comes later).
  if (window.Plotly) {
    hook(window.Plotly);
  } else {
    var pending;
    Object.defineProperty(window, "Plotly", {
      configurable: true,
      get: function () { return pending; },
      set: function (v) {
        Object.defineProperty(window, "Plotly", { value: v, writable: true, configurable: true });
        hook(v);
      }
    });
  }

  function redraw(gd) {
    var spec = gd.__scaleoutSpec;
    if (!spec || !window.Plotly || !gd.data) { return; }
    window.Plotly.react(gd, spec.data, spec.layout, spec.config);
  }

  // The theme's switch (or the OS preference) changes html[data-theme]: every figure drawn
  // in the other theme is redrawn in this one.
  if (window.MutationObserver) {
    new MutationObserver(function () {
      var theme = isDark() ? "dark" : "light";
      document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
        if (gd.dataset.theme && gd.dataset.theme !== theme) { redraw(gd); }
      });
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  // Crossing the phone/desktop width redraws with the other layout.
  var lastNarrow = null;
  window.addEventListener("resize", function () {
    var narrow = window.innerWidth < NARROW_PX + 40;
    if (lastNarrow === null) { lastNarrow = narrow; return; }
    if (narrow === lastNarrow) { return; }
    lastNarrow = narrow;
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      if (gd.offsetParent !== null) { redraw(gd); }
    });
  });

  // Print: scale every figure to the page (its SVG has the screen's width in pixels).
  function fitForPrint(on) {
    document.querySelectorAll(".scaleout-figure").forEach(function (el) {
      var svg = el.querySelector(".main-svg");
      if (!on) {
        if (el.dataset.printZoom) {
          el.style.zoom = ""; el.style.width = el.dataset.screenWidthStyle || "100%";
          delete el.dataset.printZoom;
        }
        return;
      }
      if (!svg || el.dataset.printZoom) { return; }
      var w = Number(svg.getAttribute("width")) || svg.getBoundingClientRect().width;
      if (w <= PRINT_PX) { return; }
      var k = PRINT_PX / w;
      el.dataset.screenWidthStyle = el.style.width;
      el.dataset.printZoom = String(k);
      el.style.width = w + "px"; // plotly's own width, then scaled as a whole
      el.style.zoom = String(k);
    });
  }
  window.addEventListener("beforeprint", function () { fitForPrint(true); });
  window.addEventListener("afterprint", function () { fitForPrint(false); });
  if (window.matchMedia) {
    var printQuery = window.matchMedia("print");
    var onPrint = function (e) { fitForPrint(e.matches); };
    if (printQuery.addEventListener) { printQuery.addEventListener("change", onPrint); }
    else if (printQuery.addListener) { printQuery.addListener(onPrint); }
  }

  // Rows of figure-switching buttons: one tab stop, arrow keys move between options.
  function syncRoving(bar) {
    var buttons = Array.prototype.slice.call(bar.querySelectorAll("button[role=radio]"));
    var checked = buttons.filter(function (b) { return b.getAttribute("aria-checked") === "true"; });
    var current = checked[0] || buttons[0];
    buttons.forEach(function (b) { b.setAttribute("tabindex", b === current ? "0" : "-1"); });
  }

  function initRadiogroup(bar) {
    if (bar.dataset.roving) { return; }
    bar.dataset.roving = "1";
    syncRoving(bar);
    bar.addEventListener("click", function () { setTimeout(function () { syncRoving(bar); }, 0); });
    bar.addEventListener("keydown", function (e) {
      var keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: "first", End: "last" };
      if (!(e.key in keys)) { return; }
      var buttons = Array.prototype.slice.call(bar.querySelectorAll("button[role=radio]"));
      var i = buttons.indexOf(document.activeElement);
      if (i < 0) { return; }
      var step = keys[e.key];
      var j = step === "first" ? 0 : step === "last" ? buttons.length - 1 :
        (i + step + buttons.length) % buttons.length;
      e.preventDefault();
      buttons[j].click();
      buttons[j].focus();
      syncRoving(bar);
    });
  }

  // Wide display math and tables: scroll inside their own box, with a hint when they do.
  function markScrollers() {
    var boxes = document.querySelectorAll(
      ".bd-article div.math, .bd-article mjx-container[display=true], .bd-article .table-wrapper, " +
      ".bd-article table.dataframe, .bd-article .output_html table");
    boxes.forEach(function (el) {
      var box = el;
      if (el.tagName === "TABLE" && !el.parentElement.classList.contains("scaleout-scroll")) {
        box = document.createElement("div");
        box.className = "scaleout-scroll";
        el.parentElement.insertBefore(box, el);
        box.appendChild(el);
      }
      var wide = box.scrollWidth > box.clientWidth + 2;
      box.classList.toggle("scaleout-scrolls", wide);
      if (wide && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0"); // scrollable by keyboard
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", "wide content, scrolls sideways");
        box.dataset.scaleoutTab = "1";
      } else if (!wide && box.dataset.scaleoutTab) { // narrower no more: no idle tab stop
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
        delete box.dataset.scaleoutTab;
      }
    });
    // Code and output boxes: a tab stop only while they scroll (the theme makes every box
    // that overflowed at load one, and some no longer do once the page is laid out).
    document.querySelectorAll(".bd-article pre").forEach(function (pre) {
      var scrolls = pre.scrollWidth > pre.clientWidth + 2 || pre.scrollHeight > pre.clientHeight + 2;
      if (scrolls && !pre.hasAttribute("tabindex")) {
        pre.setAttribute("tabindex", "0");
      } else if (!scrolls && pre.getAttribute("tabindex") === "0") {
        pre.removeAttribute("tabindex");
      }
    });
  }

  // Explorer notes below their figure, saying what is stored and what the live one adds.
  function explorerNotes() {
    document.querySelectorAll(".scaleout-explorer[data-explorer]").forEach(function (root) {
      var note = root.querySelector(".scaleout-explorer-note");
      if (!note || note.dataset.placed) { return; }
      note.dataset.placed = "1";
      var fig = root.querySelector(".scaleout-figure");
      if (fig && fig.nextSibling !== note) { fig.parentNode.insertBefore(note, fig.nextSibling); }
      var script = root.querySelector("script.scaleout-explorer-data");
      var count = "";
      try {
        var data = JSON.parse(script.textContent);
        count = String(data.states.length);
      } catch (err) { count = ""; }
      var first = note.firstChild;
      if (first && first.nodeType === 3) {
        first.textContent = "This explorer runs in your browser with no kernel: the figure for " +
          "each combination of the values offered by the controls above" +
          (count ? " (" + count + " figures)" : "") + " was computed in Python when the book " +
          "was built. The live explorer (open the chapter in JupyterLab, Binder or Colab with " +
          "the rocket button at the top of the page) takes any value in each control's full " +
          "range and recomputes the figure. ";
      }
    });
  }

  function humanControls() {
    document.querySelectorAll(".scaleout-explorer option, .scaleout-explorer output, " +
      ".scaleout-explorer label, .scaleout-choice-bar button").forEach(function (el) {
      if (el.children.length) { return; }
      var raw = el.textContent;
      var escaped = raw.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
      var t = human(escaped);
      if (t === escaped) { return; }
      if (el.tagName === "OPTION") {
        el.textContent = t.replace(/<sub>(.)<\/sub>/g, "$1"); // an option holds text only
      } else {
        el.innerHTML = t; // escaped text; human() adds only <sub> markup
      }
    });
  }

  // Folded cells and the theme's buttons: an accessible name that contains the visible text
  // (a speech-input user says what they see).
  function toggleNames() {
    // Icons in buttons that carry their own label are decoration, not the button's text.
    document.querySelectorAll("button[aria-label] > i[class*='fa-']").forEach(function (i) {
      i.setAttribute("aria-hidden", "true");
      if (i.classList.contains("theme-switch") && i.title) {
        i.dataset.title = i.title; // a visible icon's title would be read as its text
        i.removeAttribute("title");
      }
    });
    document.querySelectorAll(".theme-switch-button[aria-label], .search-button-field[aria-label]")
      .forEach(function (b) {
        var visible = (b.innerText || "").replace(/\s+/g, " ").trim();
        var label = b.getAttribute("aria-label") || "";
        if (visible && label.toLowerCase().indexOf(visible.toLowerCase()) < 0) {
          b.setAttribute("aria-label", visible + (label ? " (" + label + ")" : ""));
        }
      });
    document.querySelectorAll("details.hide > summary[aria-label], .toggle-button[aria-label]")
      .forEach(function (s) {
        var visible = (s.textContent || "").replace(/\s+/g, " ").trim();
        if (visible) { s.removeAttribute("aria-label"); }
      });
  }

  // A second skip link, after the theme's "Skip to main content": to the first explorer's
  // first control (a keyboard reader otherwise tabs through every link and code block above).
  function skipToExplorer() {
    var skip = document.querySelector(".skip-link");
    var first = document.querySelector(".scaleout-explorer[data-explorer]");
    if (!skip || !first || skip.querySelector(".scaleout-skip-explorer")) { return; }
    var link = document.createElement("a");
    link.className = "scaleout-skip-explorer";
    link.href = "#" + first.id;
    link.textContent = "Skip to the first explorer";
    link.addEventListener("click", function (e) {
      var control = first.querySelector(".scaleout-control-input:not([disabled])");
      if (!control) { return; }
      e.preventDefault();
      control.scrollIntoView({ block: "center" });
      control.focus();
    });
    skip.appendChild(document.createTextNode(" "));
    skip.appendChild(link);
  }

  function init() {
    skipToExplorer();
    document.querySelectorAll(".scaleout-choice-bar[role=radiogroup]").forEach(initRadiogroup);
    explorerNotes();
    toggleNames();
    markScrollers();
    humanControls();
    document.addEventListener("scaleout:drawn", humanControls, true);
    // MathJax typesets after load: look again for wide formulas once it has.
    if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
      window.MathJax.startup.promise.then(markScrollers);
    }
    // After the theme's own pass (it makes boxes that overflow at load tab stops) and once
    // the fonts are in (a box may stop overflowing then).
    setTimeout(markScrollers, 0);
    window.addEventListener("load", function () { setTimeout(markScrollers, 0); });
    if (document.fonts && document.fonts.ready) { document.fonts.ready.then(markScrollers); }
    setTimeout(markScrollers, 1500);
    window.addEventListener("resize", markScrollers);
  }

  window.ScaleoutScreens = { adapt: adapt, human: human, wrap: wrap, redraw: redraw, dark: DARK };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
