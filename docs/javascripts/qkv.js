/* qkv site scripts: interactive quizzes and widgets.
 *
 * No maths happens here. Widgets show numbers that the qkv library wrote to
 * data/*.json when the site was built; quizzes read their answers from the
 * page. Without JavaScript, quizzes stay readable as collapsible answers and
 * widgets leave a note pointing at the code blocks that print the same data.
 */
(function () {
  "use strict";

  /* Everything this script assumes about Material for MkDocs and about the
     Jupyter notebook pages (mkdocs-jupyter), in one place. A theme upgrade
     that renames one of these is fixed here; the site's own classes
     (qkv-*, quiz) stay in the code below. */
  var THEME = {
    // Material: the article's top-level blocks (the ones qkv.css lets the
    // browser skip rendering with content-visibility).
    contentBlocks: ".md-content .md-typeset > *",
    // Material: the <nav> of actions it adds to every code block.
    unlabelledCodeNav: "nav.md-code__nav:not([aria-label])",
    // Material: tables wrapped in a horizontally scrolling box.
    tableScrollWrap: ".md-typeset__scrollwrap",
    // Material: a code block's code; it makes it focusable only under a pointer.
    codeBlock: ".md-typeset pre > code",
    // mkdocs-jupyter: notebook input cells and printed outputs.
    notebookInput: ".jupyter-wrapper .highlight-ipynb",
    notebookOutput: ".jupyter-wrapper .jp-OutputArea-output pre",
  };

  var DECIMALS = 4;

  function fmt(x) {
    return Number(x).toFixed(DECIMALS);
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") node.textContent = attrs[key];
      else node.setAttribute(key, attrs[key]);
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  var uid = 0;
  function nextId(prefix) {
    uid += 1;
    return prefix + "-" + uid;
  }

  /* The site's root, from this script's own address (.../javascripts/qkv.js),
     read while the script runs (document.currentScript is null afterwards),
     so no theme internals (Material's #__config) are needed to find
     data/<widget>.json. */
  var SITE_ROOT = new URL("../", document.currentScript.src);

  var cache = {};
  function loadData(name) {
    if (!cache[name]) {
      cache[name] = fetch(new URL("data/" + name + ".json", SITE_ROOT)).then(function (response) {
        if (!response.ok) throw new Error("cannot load " + name + ".json: HTTP " + response.status);
        return response.json();
      });
    }
    return cache[name];
  }

  /* A row of numbers as a small table that wraps: as many numbers per line
     as fit the widget (at most 8, at least 2), each under its axis name, so
     a 15- or 64-number row fits a phone. */
  var PER_ROW = 8;
  var CELL_PX = 60; // a 4-decimal number and its padding, at the widgets' font size
  var perRow = PER_ROW;
  function fitPerRow(root) {
    var width = root.clientWidth || 0;
    // An even count, so that a sine and its cosine (a pair) share a line.
    perRow = width ? Math.max(2, 2 * Math.floor(Math.min(PER_ROW, Math.floor(width / CELL_PX)) / 2)) : PER_ROW;
  }
  function chunks(list) {
    var out = [];
    for (var start = 0; start < list.length; start += perRow) out.push(list.slice(start, start + perRow));
    return out;
  }
  function vectorTable(caption, axes, values, extraClass) {
    var names = chunks(axes);
    var rows = [];
    chunks(values).forEach(function (part, index) {
      rows.push(el("tr", { class: "qkv-axes" }, names[index].map(function (a) { return el("th", { scope: "col", text: a }); })));
      rows.push(el("tr", {}, part.map(function (v) { return el("td", { text: fmt(v) }); })));
    });
    return el("table", { class: "qkv-vector " + (extraClass || "") }, [el("caption", { text: caption }), el("tbody", {}, rows)]);
  }

  function labelled(labelText, control) {
    var id = nextId("qkv-control");
    control.id = id;
    return el("div", { class: "qkv-control" }, [el("label", { for: id, text: labelText }), control]);
  }

  function select(options, selected) {
    var node = el("select");
    options.forEach(function (option) {
      var item = el("option", { value: option.value, text: option.label });
      if (String(option.value) === String(selected)) item.selected = true;
      node.appendChild(item);
    });
    return node;
  }

  /* ------------------------------------------------------------------ *
   * Widget 1: token -> one-hot and embedding, with nearest neighbours.   *
   * ------------------------------------------------------------------ */
  function tokenVectors(root, data) {
    var picker = select(
      data.vocab.map(function (word, id) { return { value: id, label: word + " (id " + id + ")" }; }),
      0
    );
    var output = el("div", { class: "qkv-widget__output", "aria-live": "polite" });
    function render() {
      fitPerRow(root);
      var id = Number(picker.value);
      var oneHot = data.vocab.map(function (_, j) { return j === id ? 1 : 0; });
      // Each 0/1 under the word it stands for, as the embedding row's numbers stand under their axes.
      var words = chunks(data.vocab);
      var oneHotRows = [];
      chunks(oneHot).forEach(function (part, index) {
        oneHotRows.push(el("tr", { class: "qkv-axes" }, words[index].map(function (w) { return el("th", { scope: "col", text: w }); })));
        oneHotRows.push(el("tr", {}, part.map(function (v) { return el("td", { class: v ? "qkv-hot" : "", text: String(v) }); })));
      });
      var oneHotTable = el("table", { class: "qkv-vector qkv-onehot" }, [
        el("caption", { text: "one-hot encoding of \u201c" + data.vocab[id] + "\u201d: " + data.vocab_size + " numbers, one per word" }),
        el("tbody", {}, oneHotRows),
      ]);
      var neighbours = el("ol", { class: "qkv-neighbours" }, data.neighbours[id].map(function (pair) {
        return el("li", {}, [el("span", { class: "qkv-word", text: pair[0] }), " ", el("span", { class: "qkv-number", text: fmt(pair[1]) })]);
      }));
      output.replaceChildren(
        oneHotTable,
        vectorTable("embedding row " + id + " (" + data.d_model + " learned numbers)", data.axes, data.embeddings[id], "qkv-embedding"),
        el("p", { class: "qkv-caption", text: "Nearest neighbours by cosine similarity of the embeddings:" }),
        neighbours,
        el("p", { class: "qkv-note", text: "The one-hot vectors of two different tokens always have cosine similarity 0: one-hot says which token, never how alike two tokens are." })
      );
    }
    picker.addEventListener("change", render);
    root.replaceChildren(labelled("Token", picker), output);
    render();
  }

  /* ------------------------------------------------------------------ *
   * Widget 2: the sinusoidal table as a heatmap; a row; token + position.*
   * ------------------------------------------------------------------ */
  function colour(value) {
    // Diverging: -1 blue, 0 white, +1 red (the figures use the same map).
    var t = Math.max(-1, Math.min(1, value));
    var r = t < 0 ? Math.round(255 * (1 + t)) : 255;
    var b = t > 0 ? Math.round(255 * (1 - t)) : 255;
    var g = Math.round(255 * (1 - Math.abs(t)));
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  function positions(root, data) {
    var widths = Object.keys(data.tables).map(Number).sort(function (a, b) { return a - b; });
    var start = data.start;
    var sentence = data.sentence;
    var TOY_WIDTH = sentence.tokens[0].length; // the toy token rows' width
    var widthPicker = select(widths.map(function (d) { return { value: d, label: "d_model = " + d }; }), start.width);
    var countPicker = select(data.row_counts.map(function (n) { return { value: n, label: n + " positions" }; }), start.rows);
    var row = el("input", { type: "range", min: "0", max: String(start.rows - 1), value: String(start.position), step: "1" });
    var rowValue = el("output", { class: "qkv-number" }); // the slider's value, beside it
    var canvas = el("canvas", { class: "qkv-heatmap", width: "640", height: "320", role: "img" });
    // Axes and a colour legend, in HTML text (readable at any width).
    var columnAxis = el("div", { class: "qkv-axis qkv-axis-x" });
    var rowAxis = el("div", { class: "qkv-axis qkv-axis-y" });
    var legend = el("div", { class: "qkv-legend", "aria-hidden": "true" }, [
      el("span", { text: "\u22121" }), el("span", { class: "qkv-legend-bar" }), el("span", { text: "+1" }),
    ]);
    var rowView = el("div", { class: "qkv-widget__output", "aria-live": "polite" });
    var wordButtons = el("div", { class: "qkv-words", role: "group", "aria-label": "Words of the sentence" });
    var sumView = el("div", { class: "qkv-widget__output", "aria-live": "polite" });

    function draw() {
      fitPerRow(root);
      var d = Number(widthPicker.value);
      var n = Number(countPicker.value);
      var table = data.tables[String(d)];
      row.max = String(n - 1);
      if (Number(row.value) > n - 1) row.value = String(n - 1);
      var context = canvas.getContext("2d");
      var cellW = canvas.width / d;
      var cellH = canvas.height / n;
      for (var p = 0; p < n; p += 1) {
        for (var j = 0; j < d; j += 1) {
          context.fillStyle = colour(table[p][j]);
          context.fillRect(j * cellW, p * cellH, Math.ceil(cellW), Math.ceil(cellH));
        }
      }
      var selected = Number(row.value);
      rowValue.textContent = String(selected);
      context.strokeStyle = "#000";
      context.lineWidth = 2;
      context.strokeRect(1, selected * cellH + 1, canvas.width - 2, Math.max(cellH - 2, 1));
      canvas.setAttribute(
        "aria-label",
        "Heatmap of the sinusoidal encoding: " + n + " positions (rows, from 0 at the top) by " + d +
        " dimensions (columns, pair i = 0 at the left, the fastest wave). Position " + selected + " is outlined."
      );
      columnAxis.replaceChildren(
        el("span", { text: "dim 0 (pair 0, fastest)" }), el("span", { text: "\u2192 dim " + (d - 1) + " (slowest)" })
      );
      rowAxis.replaceChildren(el("span", { text: "rows: positions 0 (top) to " + (n - 1) + " (bottom); outlined: " + selected }));
      var axes = table[selected].map(function (_, j) { return (j % 2 ? "cos " : "sin ") + "i=" + Math.floor(j / 2); });
      rowView.replaceChildren(vectorTable("PE(" + selected + "), d_model = " + d, axes, table[selected], "qkv-pe-row"));
      showSum();
    }

    /* The sentence's rows at the chosen width and position: the word at the
       chosen position is shown; its position row is the heatmap's row. */
    function showSum() {
      var d = Number(widthPicker.value);
      var index = Number(row.value);
      Array.prototype.forEach.call(wordButtons.children, function (button, j) {
        button.setAttribute("aria-pressed", j === index ? "true" : "false");
      });
      if (index >= sentence.words.length) {
        sumView.replaceChildren(el("p", { class: "qkv-note", text: "Position " + index + " is past the sentence\u2019s " + sentence.words.length + " words: pick a word, or a position below " + sentence.words.length + "." }));
        return;
      }
      var word = sentence.words[index];
      if (d !== TOY_WIDTH) {
        sumView.replaceChildren(
          el("p", { class: "qkv-note", text: "\u201c" + word + "\u201d is at position " + index + ": its position row is the outlined row above. The toy\u2019s token rows have " + TOY_WIDTH + " numbers: set Width to d_model = " + TOY_WIDTH + " to add them." })
        );
        return;
      }
      // The position row is the outlined row above (PE(index)): shown once, there.
      sumView.replaceChildren(
        vectorTable("token row: \u201c" + word + "\u201d, + PE(" + index + ") above", sentence.axes, sentence.tokens[index], "qkv-token-row"),
        vectorTable("= z row fed to attention", sentence.axes, sentence.sums[index], "qkv-sum-row")
      );
    }
    canvas.addEventListener("click", function (event) {
      var box = canvas.getBoundingClientRect();
      var n = Number(countPicker.value);
      row.value = String(Math.min(n - 1, Math.floor(((event.clientY - box.top) / box.height) * n)));
      draw();
    });
    [widthPicker, countPicker, row].forEach(function (control) { control.addEventListener("input", draw); });
    [widthPicker, countPicker].forEach(function (control) { control.addEventListener("change", draw); });
    sentence.words.forEach(function (word, index) {
      var button = el("button", { type: "button", class: "qkv-word-button", "aria-pressed": "false", text: word + " (pos " + index + ")" });
      // A word is a position: picking it moves the Position control and the outline.
      button.addEventListener("click", function () { row.value = String(index); draw(); });
      wordButtons.appendChild(button);
    });

    root.replaceChildren(
      el("div", { class: "qkv-controls" }, [labelled("Width", widthPicker), labelled("Rows", countPicker), labelled("Position", row), rowValue]),
      columnAxis,
      canvas,
      rowAxis,
      legend,
      rowView,
      el("p", { class: "qkv-caption", text: "The sentence \u201c" + sentence.words.join(" ") + "\u201d: a word is a position; its token row plus the outlined position row is what attention reads." }),
      wordButtons,
      sumView
    );
    draw();
  }

  /* ------------------------------------------------------------------ *
   * Widget 3: attention weights for the bank sentences, with a scale.    *
   * ------------------------------------------------------------------ */
  function attention(root, data) {
    var sentencePicker = select(data.sentences.map(function (s, i) { return { value: i, label: s.words.join(" ") }; }), 0);
    // The steps and the one to start at (the paper's 1/sqrt(d_k)) come from
    // the data, written by the build from qkv; the slider runs soft to sharp,
    // left to right: the smallest factor at the left.
    var steps = data.scale_steps.slice().sort(function (a, b) { return a.factor - b.factor; });
    var startAt = steps.indexOf(data.scale_steps[data.start_step]);
    var scale = el("input", { type: "range", min: "0", max: String(steps.length - 1), step: "1", value: String(startAt) });
    var scaleText = el("output", { class: "qkv-number" });
    var view = el("div", { class: "qkv-widget__output", "aria-live": "polite" });
    var selectedRow = 1;
    var selectedWord = data.sentences[0].words[selectedRow];

    var SAYS = {
      unscaled: " (unscaled)",
      paper: " = 1/\u221ad\u2096 (the paper)",
      sharper: " (sharper)",
      softer: " (softer)",
    };
    function describe(step) {
      return "\u00d7 " + step.key + SAYS[step.kind];
    }

    function render() {
      fitPerRow(root);
      var sentence = data.sentences[Number(sentencePicker.value)];
      var s = steps[Number(scale.value)];
      var result = sentence.by_scale[s.key];
      scaleText.textContent = describe(s);
      scale.setAttribute("aria-valuetext", describe(s));
      var header = el("tr", {}, [el("th", { scope: "col", text: "query \u2193 / key \u2192" })].concat(
        sentence.words.map(function (w) { return el("th", { scope: "col", text: w }); })
      ));
      var rows = result.weights.map(function (weights, i) {
        var rowHeader = el("th", { scope: "row" }, [
          el("button", { type: "button", class: "qkv-row-button", "aria-pressed": i === selectedRow ? "true" : "false", text: sentence.words[i] }),
        ]);
        rowHeader.firstChild.addEventListener("click", function () {
          selectedRow = i;
          selectedWord = sentence.words[i];
          render();
        });
        return el("tr", { class: i === selectedRow ? "qkv-selected" : "" }, [rowHeader].concat(weights.map(function (w) {
          // The number stays in the page's own colours (contrast in both
          // palettes); a bar under it shows the weight at a glance.
          var bar = el("span", { class: "qkv-bar", "aria-hidden": "true" });
          bar.style.width = (100 * w).toFixed(1) + "%";
          return el("td", {}, [fmt(w), bar]);
        })));
      });
      view.replaceChildren(
        el("table", { class: "qkv-attention" }, [
          el("caption", { text: "Attention weights (each row sums to 1)" }),
          el("thead", {}, [header]),
          el("tbody", {}, rows),
        ]),
        vectorTable("contextual vector of \u201c" + sentence.words[selectedRow] + "\u201d", data.axes, result.outputs[selectedRow], "qkv-context-row")
      );
    }
    // Another sentence keeps the reader's word selected, wherever it now stands.
    sentencePicker.addEventListener("change", function () {
      var at = data.sentences[Number(sentencePicker.value)].words.indexOf(selectedWord);
      if (at >= 0) selectedRow = at;
      else selectedWord = data.sentences[Number(sentencePicker.value)].words[selectedRow];
      render();
    });
    scale.addEventListener("input", render);
    // The slider's ends say which way is which (its value text says the factor).
    var scaleControl = labelled("Score scale", scale);
    scale.insertAdjacentElement("beforebegin", el("span", { class: "qkv-range-end", "aria-hidden": "true", text: "softer" }));
    scale.insertAdjacentElement("afterend", el("span", { class: "qkv-range-end", "aria-hidden": "true", text: "sharper" }));
    root.replaceChildren(
      el("div", { class: "qkv-controls" }, [labelled("Sentence", sentencePicker), scaleControl, scaleText]),
      view
    );
    render();
  }

  /* One name per widget, as declared in the page's companion module
     (docs/chapters/<page>.py, @widget("name")): the page's data-widget, the
     data file data/<name>.json and the key here. */
  var WIDGETS = { "token-vectors": tokenVectors, positions: positions, attention: attention };

  function mountWidgets() {
    document.querySelectorAll(".qkv-widget[data-widget]").forEach(function (root) {
      var name = root.getAttribute("data-widget");
      var mount = WIDGETS[name];
      if (!mount || root.getAttribute("data-ready")) return;
      root.setAttribute("data-ready", "loading");
      loadData(name).then(function (data) {
        mount(root, data);
        root.setAttribute("data-ready", "true");
      }).catch(function (error) {
        root.setAttribute("data-ready", "error");
        root.replaceChildren(el("p", { class: "qkv-note", text: "This figure could not load its data (" + error.message + ")." }));
      });
    });
  }

  /* ------------------------------------------------------------------ *
   * Quizzes: choices become buttons. A wrong pick is marked wrong and   *
   * shows its hint (the nested list item under that choice, naming the  *
   * misconception); the reader tries again. The explanation opens on    *
   * the right pick, or on "Show the answer" after two wrong picks, and  *
   * then it is not styled as a success. Without JavaScript, the hints   *
   * stay hidden (qkv.css) and the answer stays a collapsible box.        *
   * ------------------------------------------------------------------ */
  var SHOW_AFTER = 2; // wrong picks before "Show the answer" is offered

  function mountQuizzes() {
    document.querySelectorAll(".quiz").forEach(function (quiz) {
      if (quiz.getAttribute("data-ready")) return;
      var details = quiz.querySelector("details");
      var list = quiz.querySelector("ul");
      if (!details || !list) return;
      var summary = details.querySelector("summary");
      var match = /Answer:\s*([A-E])/.exec(summary.textContent);
      if (!match) return;
      var answer = match[1];
      var question = quiz.querySelector("p strong");
      var questionId = nextId("qkv-question");
      if (question) question.parentElement.id = questionId;
      var feedback = el("p", { class: "qkv-feedback", role: "status", "aria-live": "polite" });
      var group = el("div", { class: "qkv-choices", role: "group", "aria-labelledby": questionId });
      var reveal = el("button", { type: "button", class: "qkv-reveal", text: "Show the answer" });
      reveal.hidden = true;
      var wrongPicks = 0;
      var done = false;

      function say(text, kind) {
        feedback.textContent = text;
        feedback.className = "qkv-feedback" + (kind ? " " + kind : "");
      }
      function explain(asSuccess) {
        done = true;
        reveal.hidden = true;
        if (!asSuccess) details.classList.replace("success", "info");
        details.hidden = false;
        details.open = true;
      }

      Array.prototype.forEach.call(list.children, function (item) {
        var hintList = item.querySelector("ul");
        var hint = hintList ? hintList.textContent.trim() : "";
        // The hint's own nodes (maths included), shown after a wrong pick.
        var hintNodes = hintList ? Array.prototype.slice.call(hintList.querySelector("li").childNodes) : [];
        if (hintList) hintList.remove();
        var letter = item.textContent.trim().charAt(0);
        var button = el("button", { type: "button", class: "qkv-choice", "aria-pressed": "false", "data-letter": letter });
        if (hint) button.setAttribute("data-hint", hint);
        while (item.firstChild) button.appendChild(item.firstChild);
        button.addEventListener("click", function () {
          if (done || button.getAttribute("aria-pressed") === "true") return;
          button.setAttribute("aria-pressed", "true");
          if (letter === answer) {
            button.classList.add("qkv-right");
            say("Correct: " + answer + ".", "qkv-right");
            explain(true);
            return;
          }
          wrongPicks += 1;
          button.classList.add("qkv-wrong");
          say("Not quite (" + letter + "). ", "qkv-wrong");
          if (hintNodes.length) {
            hintNodes.forEach(function (node) { feedback.appendChild(node.cloneNode(true)); });
          } else {
            feedback.appendChild(document.createTextNode("Think again."));
          }
          feedback.appendChild(document.createTextNode(" Try another choice."));
          if (wrongPicks >= SHOW_AFTER) reveal.hidden = false;
        });
        group.appendChild(button);
      });
      reveal.addEventListener("click", function () {
        var right = group.querySelector('button[data-letter="' + answer + '"]');
        if (right) right.classList.add("qkv-answer");
        say("The answer is " + answer + ".", "qkv-shown");
        explain(false);
      });
      list.replaceWith(group);
      summary.textContent = "Explanation";
      details.hidden = true; // shown once the reader has found or asked for the answer
      group.after(feedback);
      feedback.after(reveal);
      quiz.setAttribute("data-answer", answer);
      quiz.setAttribute("data-ready", "true");
    });
  }

  /* Material builds a <nav> in every code block; give each a distinct name. */
  var navCount = 0;
  function labelCodeNavs() {
    document.querySelectorAll(THEME.unlabelledCodeNav).forEach(function (nav) {
      navCount += 1;
      nav.setAttribute("aria-label", "Code block " + navCount + " actions");
    });
  }

  /* The height an unrendered block will have once rendered. Reading
     positions inside it lays it out without rendering it (its own box keeps
     the placeholder size), so the height is taken from its content: the
     lowest margin edge of its block-level children (content-visibility
     contains their margins) and the bottom of its last line box. A closed
     box (details) is its summary: the browser still lays out the content it
     hides, and counting it made a phone's scrollbar say 20 screens for a
     page of 12. */
  function naturalHeight(block) {
    var bottom = block.getBoundingClientRect().top;
    var inline = false;
    var closed = block.tagName === "DETAILS" && !block.open;
    Array.prototype.forEach.call(block.childNodes, function (child) {
      if (closed && child.tagName !== "SUMMARY") return;
      if (child.nodeType === 3) {
        inline = inline || child.textContent.trim() !== "";
        return;
      }
      if (child.nodeType !== 1) return;
      var style = getComputedStyle(child);
      if (style.display === "none" || style.position === "absolute" || style.position === "fixed") return;
      if (/^inline/.test(style.display)) {
        inline = true;
        return;
      }
      bottom = Math.max(bottom, child.getBoundingClientRect().bottom + parseFloat(style.marginBottom));
    });
    if (inline) {
      // A marker aligned to the bottom of the last line box finds its edge.
      var marker = document.createElement("span");
      marker.style.cssText = "display:inline-block;vertical-align:bottom;width:0;height:0";
      block.appendChild(marker);
      bottom = Math.max(bottom, marker.getBoundingClientRect().bottom);
      marker.remove();
    }
    var style = getComputedStyle(block);
    return bottom - block.getBoundingClientRect().top + parseFloat(style.paddingBottom) + parseFloat(style.borderBottomWidth);
  }

  /* After load, in idle slices of about 8 ms (so that no task is long):

     1. Blocks that content-visibility: auto keeps unrendered (qkv.css)
        start with a guessed height. Measure each one's real height and,
        once all are measured, make it the placeholder, so the scrollbar, a
        jump to any position and hit-testing tools (axe) see the page as it
        will be. Writing them all at once moves the page below the first
        screen once, not once per slice.
     2. A region that scrolls sideways must be reachable by keyboard (code
        and output blocks, notebook cells, wide formulas). Material makes a
        code block focusable only once it is on screen, and only where a
        pointer can hover; the same rule here covers the rest. Reading a
        size inside an unrendered block lays it out without painting it.

     When done, the page is marked data-qkv-measured (the browser tests
     wait for it). */
  function measureAfterLoad() {
    var blocks = Array.prototype.slice.call(document.querySelectorAll(THEME.contentBlocks));
    var deferred = blocks.filter(function (node) { return getComputedStyle(node).contentVisibility === "auto"; });
    var selector = [".qkv-output", ".qkv-math", "math", THEME.tableScrollWrap, THEME.notebookInput, THEME.notebookOutput].join(", ");
    if (matchMedia("(hover)").matches) selector += ", " + THEME.codeBlock;
    var scrollers = Array.prototype.slice.call(document.querySelectorAll(selector));
    var heights = [];
    var later = window.requestIdleCallback
      ? function (step) { window.requestIdleCallback(step, { timeout: 200 }); }
      : function (step) { window.setTimeout(step, 16); };
    function step() {
      var start = performance.now();
      while (performance.now() - start < 8) {
        if (deferred.length) {
          var block = deferred.shift();
          heights.push([block, naturalHeight(block)]);
        } else if (scrollers.length) {
          var node = scrollers.shift();
          if (node.scrollWidth > node.clientWidth + 1 && !node.hasAttribute("tabindex")) node.setAttribute("tabindex", "0");
        } else {
          // Keep what is on screen where it is while the blocks above it
          // change height (the browser's own scroll anchoring does not).
          var anchor = blocks.find(function (node) { return node.getBoundingClientRect().top >= 0; });
          var before = anchor && anchor.getBoundingClientRect().top;
          heights.forEach(function (pair) { pair[0].style.containIntrinsicSize = "auto " + pair[1] + "px"; });
          if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
          document.documentElement.setAttribute("data-qkv-measured", "true");
          return;
        }
      }
      later(step);
    }
    later(step);
  }

  function init() {
    mountQuizzes();
    mountWidgets();
    labelCodeNavs();
    new MutationObserver(labelCodeNavs).observe(document.body, { childList: true, subtree: true });
    if (document.readyState === "complete") measureAfterLoad();
    else window.addEventListener("load", measureAfterLoad);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
