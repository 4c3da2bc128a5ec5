/* Run buttons for the SQL blocks of "Attention is a query".
 *
 * Loaded only on pages whose front matter says `sql_runner: true`
 * (docs/hooks/hooks.py adds the script tag). Every block marked `.qkv-sql`
 * gets a Run button. SQLite compiled to WebAssembly (sql.js, copied into the
 * site from node_modules by the build, never fetched from another host) is
 * loaded on the first click only, so the page costs nothing extra to load.
 *
 * A Run starts a fresh in-memory database, runs every SQL block above the
 * clicked one (as the reader last edited it, like notebook cells run from
 * the top), then the clicked block. The first Run turns the block into one
 * editable box (the static copy is hidden, so it is not shown twice). Before
 * a block runs, the views and tables it creates are dropped, so a block can
 * redefine a step; open blocks below an edited step say "re-run to see the
 * effect". A scratch box after the last block runs every block, then any
 * query on the views they made; its label names the block whose definition
 * of each view is in force where two blocks define it (a later mask replaces
 * an earlier one). The result is the last statement's rows or, for a block
 * that only creates things, the rows of the last view or table it created,
 * as a table under a caption that says which: numbers shown to 4 decimals,
 * the full value on hover and when copied. An error shows the database's own
 * message and its block and line.
 */
(function () {
  "use strict";

  var SCRIPT_URL = new URL(document.currentScript.src);
  var SQLJS_DIR = new URL("sqljs/", SCRIPT_URL);
  var CREATED = /\bCREATE\s+(?:TEMP\s+|TEMPORARY\s+)?(VIEW|TABLE)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi;

  var engine = null;
  function loadEngine() {
    if (!engine) {
      engine = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = new URL("sql-wasm.js", SQLJS_DIR).href;
        script.onload = function () { resolve(); };
        script.onerror = function () { reject(new Error("could not load " + script.src)); };
        document.head.appendChild(script);
      }).then(function () {
        /* global initSqlJs */
        return initSqlJs({
          locateFile: function (file) { return new URL(file, SQLJS_DIR).href; },
          // SQLite's own math functions (exp, sqrt, ...), not sql.js's legacy ones.
          useOldExtensionFunctions: false,
        });
      });
      engine.catch(function () { engine = null; }); // a failed load may be retried
    }
    return engine;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function created(text) {
    var found = [];
    var match;
    CREATED.lastIndex = 0;
    while ((match = CREATED.exec(text)) !== null) found.push({ kind: match[1].toUpperCase(), name: match[2] });
    return found;
  }

  function kindOf(db, name) {
    var rows = db.exec(
      "SELECT type FROM sqlite_temp_master WHERE name = $n UNION ALL SELECT type FROM sqlite_master WHERE name = $n",
      { $n: name }
    );
    return rows.length ? String(rows[0].values[0][0]).toUpperCase() : null;
  }

  /* The line of `text` at which `rest` (what is left of it) starts. */
  function lineAt(text, rest) {
    var before = text.slice(0, text.length - rest.length);
    var skipped = rest.length - rest.replace(/^\s+/, "").length;
    return (before + rest.slice(0, skipped)).split("\n").length;
  }

  /* Run one block's text statement by statement: drop what it creates,
     run it, return its rows; an error names the line of its statement. */
  function runText(db, text, name) {
    var objects = created(text);
    objects.forEach(function (object) {
      // A text that drops the object itself (DROP VIEW visible; CREATE ...) does it in its own order.
      if (new RegExp("\\bDROP\\s+(VIEW|TABLE)\\s+(IF\\s+EXISTS\\s+)?" + object.name + "\\b", "i").test(text)) return;
      var kind = kindOf(db, object.name);
      if (kind === "VIEW" || kind === "TABLE") db.exec("DROP " + kind + " " + object.name);
    });
    var last = null;
    var statements = db.iterateStatements(text);
    var rest = text;
    for (;;) {
      var statement;
      try {
        var next = statements.next();
        if (next.done) break;
        statement = next.value;
      } catch (error) {
        throw new Error(name + ", line " + lineAt(text, rest) + ": " + error.message);
      }
      var line = lineAt(text, rest);
      rest = statements.getRemainingSQL();
      try {
        var columns = statement.getColumnNames();
        var values = [];
        while (statement.step()) values.push(statement.get());
        if (columns.length) last = { columns: columns, values: values, caption: "Rows of the statement at line " + line };
      } catch (error) {
        throw new Error(name + ", line " + line + ": " + error.message);
      } finally {
        statement.free();
      }
    }
    if (last) return last;
    if (objects.length) {
      var made = objects[objects.length - 1];
      var rows;
      try {
        rows = db.exec("SELECT * FROM " + made.name);
      } catch (error) {
        throw new Error(name + ", reading " + made.kind.toLowerCase() + " " + made.name + ": " + error.message);
      }
      var caption = "Rows of " + made.kind.toLowerCase() + " " + made.name + ", the last this block creates";
      var result = rows.length ? rows[0] : { columns: [], values: [], empty: made.name };
      result.caption = caption;
      return result;
    }
    return { columns: [], values: [] };
  }

  /* A number as the table shows it: at most 4 decimals. */
  function shown(cell) {
    if (cell === null) return "NULL";
    if (typeof cell === "number" && !Number.isInteger(cell)) return String(Number(cell.toFixed(4)));
    return String(cell);
  }

  function resultTable(result) {
    if (!result.values.length) {
      return el("p", { class: "qkv-sql-empty" }, result.empty ? result.empty + " has no rows." : "No rows.");
    }
    var table = el("table", { class: "qkv-sql-table" });
    if (result.caption) table.appendChild(el("caption", {}, result.caption));
    var head = el("tr");
    result.columns.forEach(function (c) { head.appendChild(el("th", { scope: "col" }, c)); });
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    result.values.forEach(function (row) {
      var tr = body.appendChild(el("tr"));
      row.forEach(function (cell) {
        var td = el("td", {}, shown(cell));
        if (typeof cell === "number") td.className = "qkv-sql-number";
        if (shown(cell) !== String(cell)) {
          td.title = String(cell);
          td.dataset.full = String(cell);
        }
        tr.appendChild(td);
      });
    });
    // Copying cells copies their full values, tab-separated, a row per line.
    table.addEventListener("copy", function (event) {
      var selection = window.getSelection();
      var lines = [];
      table.querySelectorAll("tr").forEach(function (tr) {
        var cells = Array.prototype.filter.call(tr.children, function (cell) { return selection.containsNode(cell, true); });
        if (cells.length) lines.push(cells.map(function (cell) { return cell.dataset.full || cell.textContent; }).join("\t"));
      });
      if (!lines.length) return;
      event.clipboardData.setData("text/plain", lines.join("\n"));
      event.preventDefault();
    });
    var wrap = el("div", { class: "qkv-sql-scroll", tabindex: "0", role: "region", "aria-label": result.caption || "Result rows" });
    wrap.appendChild(table);
    return wrap;
  }

  function setup(blocks) {
    var steps = blocks.map(function (block, index) {
      return { block: block, index: index, name: "block " + (index + 1), original: block.querySelector("code").textContent, editor: null, ranWith: null, stale: null };
    });
    function textOf(step) { return step.editor ? step.editor.value : step.original; }
    function above(index) { return steps.slice(0, index).map(textOf); }

    /* Open blocks below an edited step say that their result is out of date. */
    function markStale() {
      steps.forEach(function (step) {
        if (!step.stale) return;
        var changed = step.ranWith !== null && step.ranWith !== JSON.stringify(above(step.index));
        step.stale.hidden = !changed;
      });
    }

    function run(button, output, index, text, name, step) {
      output.replaceChildren(el("p", {}, "Running in SQLite (WebAssembly)..."));
      button.disabled = true;
      return loadEngine().then(function (SQL) {
        var db = new SQL.Database();
        try {
          steps.slice(0, index).forEach(function (upper) { runText(db, textOf(upper), upper.name); });
          output.replaceChildren(resultTable(runText(db, text, name)));
        } catch (error) {
          output.replaceChildren(el("p", { class: "qkv-sql-error", role: "alert" }, "Error: " + error.message));
        } finally {
          db.close();
        }
        if (step) step.ranWith = JSON.stringify(above(index));
        markStale();
      }).catch(function (error) {
        output.replaceChildren(el("p", { class: "qkv-sql-error", role: "alert" }, "Error: " + error.message));
      }).then(function () {
        button.disabled = false;
      });
    }

    steps.forEach(function (step) {
      var block = step.block;
      var button = el("button", { type: "button", class: "qkv-sql-run" }, "Run");
      button.setAttribute("aria-label", "Run this SQL in your browser (SQLite)");
      var bar = el("div", { class: "qkv-sql-bar" });
      bar.appendChild(button);
      block.insertAdjacentElement("afterend", bar);
      var output = null;

      function openPanel() {
        var panel = el("div", { class: "qkv-sql-panel" });
        var id = "qkv-sql-query-" + step.index;
        panel.appendChild(el("label", { for: id }, "Query (edit it and press Run again):"));
        step.editor = el("textarea", { id: id, class: "qkv-sql-editor", rows: String(Math.min(16, step.original.split("\n").length + 1)), spellcheck: "false" });
        step.editor.value = step.original.replace(/\n$/, "");
        panel.appendChild(step.editor);
        step.stale = el("p", { class: "qkv-sql-stale", role: "status" }, "A step above was edited: press Run to see the effect.");
        step.stale.hidden = true;
        panel.appendChild(step.stale);
        output = el("div", { class: "qkv-sql-output", role: "status", "aria-live": "polite" });
        panel.appendChild(output);
        bar.insertAdjacentElement("afterend", panel);
        // The editable box takes the static block's place: the query is shown once.
        block.hidden = true;
      }

      button.addEventListener("click", function () {
        if (!step.editor) openPanel();
        run(button, output, step.index, step.editor.value, step.name, step);
      });
    });

    // The scratch box: every block above, as edited, then the reader's query.
    var last = steps[steps.length - 1];
    var anchor = last.block.nextElementSibling; // its Run bar
    var scratch = el("div", { class: "qkv-sql-panel qkv-sql-scratch" });
    scratch.appendChild(el("label", { for: "qkv-sql-scratch" }, "Scratch query: every view and table the blocks above make (with your edits) is here:"));
    // Where two blocks define the same view, the lower one's is in force: say whose.
    var scopeNote = el("p", { class: "qkv-sql-in-force" });
    function describeInForce() {
      var definedBy = {};
      var count = {};
      steps.forEach(function (step) {
        created(textOf(step)).forEach(function (object) {
          definedBy[object.name] = step.name;
          count[object.name] = (count[object.name] || 0) + 1;
        });
      });
      var redefined = Object.keys(count).filter(function (name) { return count[name] > 1; });
      scopeNote.textContent = redefined.length
        ? "In force here: " + redefined.map(function (name) { return name + " from " + definedBy[name]; }).join(", ") +
          " (the last block that defines each)."
        : "";
      scopeNote.hidden = !redefined.length;
    }
    describeInForce();
    scratch.appendChild(scopeNote);
    var box = el("textarea", { id: "qkv-sql-scratch", class: "qkv-sql-editor", rows: "3", spellcheck: "false" });
    box.value = "SELECT name, type FROM sqlite_temp_master ORDER BY type, name;";
    // The box grows with the query, up to 16 lines.
    box.addEventListener("input", function () {
      box.rows = Math.max(3, Math.min(16, box.value.split("\n").length + 1));
    });
    scratch.appendChild(box);
    var scratchBar = el("div", { class: "qkv-sql-bar" });
    var scratchButton = el("button", { type: "button", class: "qkv-sql-run" }, "Run");
    scratchButton.setAttribute("aria-label", "Run the scratch query in your browser (SQLite)");
    scratchBar.appendChild(scratchButton);
    scratch.appendChild(scratchBar);
    var scratchOutput = el("div", { class: "qkv-sql-output", role: "status", "aria-live": "polite" });
    scratch.appendChild(scratchOutput);
    anchor.insertAdjacentElement("afterend", scratch);
    scratchButton.addEventListener("click", function () {
      describeInForce();
      run(scratchButton, scratchOutput, steps.length, box.value, "the scratch query", null);
    });
  }

  function start() {
    var blocks = Array.prototype.slice.call(document.querySelectorAll("div.qkv-sql"));
    if (blocks.length) setup(blocks);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
