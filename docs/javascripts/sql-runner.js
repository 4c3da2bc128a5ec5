/* Run buttons for the SQL blocks of "Attention is a query".
 *
 * Loaded only on pages whose front matter says `sql_runner: true`
 * (docs/hooks/hooks.py adds the script tag). Every block marked `.qkv-sql`
 * gets a Run button. SQLite compiled to WebAssembly (sql.js, copied into the
 * site from node_modules by the build, never fetched from another host) is
 * loaded on the first click only, so the page costs nothing extra to load.
 *
 * A Run starts a fresh in-memory database, runs every SQL block above the
 * clicked one as the page shows it (like running notebook cells from the
 * top), then the clicked block's text, which the reader can edit. Before a
 * block runs, the views and tables it creates are dropped, so a block can
 * redefine a step (the views are late bound: later steps use the new one).
 * The result is the last statement's rows or, for a block that only creates
 * things, the rows of the last view or table it created. An error shows the
 * database's own message.
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

  /* Run one block's text: drop what it creates, run it, return its rows. */
  function runText(db, text) {
    var objects = created(text);
    objects.forEach(function (object) {
      var kind = kindOf(db, object.name);
      if (kind === "VIEW" || kind === "TABLE") db.exec("DROP " + kind + " " + object.name);
    });
    var results = db.exec(text);
    if (results.length) return results[results.length - 1];
    if (objects.length) {
      var last = objects[objects.length - 1].name;
      var rows = db.exec("SELECT * FROM " + last);
      return rows.length ? rows[0] : { columns: [], values: [], empty: last };
    }
    return { columns: [], values: [] };
  }

  function resultTable(result) {
    if (!result.values.length) {
      return el("p", { class: "qkv-sql-empty" }, result.empty ? result.empty + " has no rows." : "No rows.");
    }
    var table = el("table", { class: "qkv-sql-table" });
    var head = el("tr");
    result.columns.forEach(function (c) { head.appendChild(el("th", { scope: "col" }, c)); });
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    result.values.forEach(function (row) {
      var tr = body.appendChild(el("tr"));
      row.forEach(function (cell) { tr.appendChild(el("td", {}, cell === null ? "NULL" : String(cell))); });
    });
    return table;
  }

  function setup(blocks) {
    blocks.forEach(function (block) { block.dataset.qkvSql = block.querySelector("code").textContent; });
    blocks.forEach(function (block, index) {
      var original = block.dataset.qkvSql;
      var button = el("button", { type: "button", class: "qkv-sql-run" }, "Run");
      button.setAttribute("aria-label", "Run this SQL in your browser (SQLite)");
      var bar = el("div", { class: "qkv-sql-bar" });
      bar.appendChild(button);
      block.insertAdjacentElement("afterend", bar);
      var panel = null;
      var editor = null;
      var output = null;

      function openPanel() {
        panel = el("div", { class: "qkv-sql-panel" });
        var id = "qkv-sql-query-" + index;
        panel.appendChild(el("label", { for: id }, "Query (edit it and press Run again):"));
        editor = el("textarea", { id: id, class: "qkv-sql-editor", rows: String(Math.min(14, original.split("\n").length + 1)), spellcheck: "false" });
        editor.value = original.replace(/\n$/, "");
        panel.appendChild(editor);
        output = el("div", { class: "qkv-sql-output", role: "status", "aria-live": "polite" });
        panel.appendChild(output);
        bar.insertAdjacentElement("afterend", panel);
      }

      button.addEventListener("click", function () {
        if (!panel) openPanel();
        var text = editor.value;
        output.replaceChildren(el("p", {}, "Running in SQLite (WebAssembly)..."));
        button.disabled = true;
        loadEngine().then(function (SQL) {
          var db = new SQL.Database();
          try {
            blocks.slice(0, index).forEach(function (above) { runText(db, above.dataset.qkvSql); });
            output.replaceChildren(resultTable(runText(db, text)));
          } catch (error) {
            output.replaceChildren(el("p", { class: "qkv-sql-error", role: "alert" }, "Error: " + error.message));
          } finally {
            db.close();
          }
        }).catch(function (error) {
          output.replaceChildren(el("p", { class: "qkv-sql-error", role: "alert" }, "Error: " + error.message));
        }).then(function () {
          button.disabled = false;
        });
      });
    });
  }

  function start() {
    var blocks = Array.prototype.slice.call(document.querySelectorAll("div.qkv-sql"));
    if (blocks.length) setup(blocks);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
