/* sitegen's one script: sortable tables, the question filter, focusable scroll boxes and details opened for print.
 *
 * Progressive: every page is complete without it, and it changes no content, only the order and visibility of
 * rows. No framework, no inline script and no eval, so a strict Content-Security-Policy (script-src 'self') holds.
 * Hooks, set by the templates:
 *   table[data-sortable]            each header cell of its head's last row gets a sort button (aria-sort on the th);
 *                                   a cell's key is its data-sort-value, else the first number of its text, else its
 *                                   text; an empty cell or a dash sorts last in either direction
 *   form[data-filter="ID"]          filters the rows of table#ID: input[data-filter-text] (the row's text contains
 *                                   it), select[data-filter-facet="NAME"] (the row's data-NAME equals the choice),
 *                                   input[data-filter-flag="NAME"] (checked: only rows with data-NAME="true");
 *                                   [data-filter-count] says how many rows are shown
 *   .wide                           a table's scroll box: focusable (tabindex) only while it scrolls
 */
(function () {
  "use strict";

  var MISSING = /^(?:[-\u2013\u2014]|n\/a|none)?$/i;
  var NUMBER = /[+\u2212-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?/i;

  function cellKey(cell) {
    if (cell.hasAttribute("data-sort-value")) {
      var given = cell.getAttribute("data-sort-value");
      var value = parseFloat(given);
      return isNaN(value) ? { text: given } : { number: value };
    }
    var text = (cell.textContent || "").replace(/\s+/g, " ").trim();
    if (MISSING.test(text) || /^[-\u2013\u2014] /.test(text)) {
      return { missing: true };
    }
    var found = NUMBER.exec(text);
    if (found && found.index <= 2) {
      return { number: parseFloat(found[0].replace("\u2212", "-")) };
    }
    return { text: text.toLowerCase() };
  }

  function compare(a, b) {
    if (a.missing || b.missing) {
      return a.missing && b.missing ? 0 : a.missing ? 1 : -1;
    }
    if (a.number !== undefined && b.number !== undefined) {
      return a.number - b.number;
    }
    if (a.number !== undefined || b.number !== undefined) {
      return a.number !== undefined ? -1 : 1;
    }
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }

  function headerLabel(th) {
    return (th.textContent || "").replace(/\s+/g, " ").trim();
  }

  function makeSortable(table) {
    var head = table.tHead;
    var body = table.tBodies[0];
    if (!head || !body || table.tBodies.length !== 1) {
      return;
    }
    var cells = head.rows[head.rows.length - 1].cells;
    var original = Array.prototype.slice.call(body.rows);
    Array.prototype.forEach.call(cells, function (th, column) {
      if (th.colSpan !== 1 || !headerLabel(th)) {
        return;
      }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      if (th.querySelector("a, button, input, select")) {
        // a header that holds a link keeps it; the button beside it is named for the column
        button.setAttribute("aria-label", "sort by " + headerLabel(th));
        th.appendChild(button);
      } else {
        while (th.firstChild) {
          button.appendChild(th.firstChild);
        }
        th.appendChild(button);
      }
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(cells, function (other) {
          other.removeAttribute("aria-sort");
        });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var keyed = original.map(function (row, index) {
          var cell = row.cells[column];
          return { row: row, index: index, key: cell ? cellKey(cell) : { missing: true } };
        });
        keyed.sort(function (a, b) {
          if (a.key.missing !== b.key.missing) {
            return a.key.missing ? 1 : -1; // missing values last in either direction
          }
          var order = compare(a.key, b.key);
          return (ascending ? order : -order) || a.index - b.index;
        });
        keyed.forEach(function (item) {
          body.appendChild(item.row);
        });
      });
    });
  }

  function setupFilter(form) {
    var table = document.getElementById(form.getAttribute("data-filter"));
    if (!table || !table.tBodies[0]) {
      return;
    }
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var text = form.querySelector("[data-filter-text]");
    var facets = form.querySelectorAll("[data-filter-facet]");
    var flags = form.querySelectorAll("[data-filter-flag]");
    var count = form.querySelector("[data-filter-count]");
    var noun = form.getAttribute("data-filter-noun") || "rows";

    function apply() {
      var wanted = text ? text.value.trim().toLowerCase() : "";
      var shown = 0;
      rows.forEach(function (row) {
        var keep = !wanted || (row.textContent || "").toLowerCase().indexOf(wanted) !== -1;
        Array.prototype.forEach.call(facets, function (select) {
          var choice = select.value;
          if (choice && row.getAttribute("data-" + select.getAttribute("data-filter-facet")) !== choice) {
            keep = false;
          }
        });
        Array.prototype.forEach.call(flags, function (box) {
          if (box.checked && row.getAttribute("data-" + box.getAttribute("data-filter-flag")) !== "true") {
            keep = false;
          }
        });
        row.hidden = !keep;
        shown += keep ? 1 : 0;
      });
      if (count) {
        count.textContent = shown + " of " + rows.length + " " + noun + " shown";
      }
    }

    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      apply();
    });
    form.hidden = false;
    apply();
  }

  function focusScrollers() {
    // a scroll box is a tab stop (so a keyboard can scroll it) only while its table is wider than the box
    Array.prototype.forEach.call(document.querySelectorAll(".wide"), function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        box.setAttribute("tabindex", "0");
      } else {
        box.removeAttribute("tabindex");
      }
    });
  }

  function openForPrint() {
    // a printed page shows what its folded sections hold; they fold again after printing
    var opened = [];
    window.addEventListener("beforeprint", function () {
      opened = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) {
        return !d.open;
      });
      opened.forEach(function (d) {
        d.open = true;
      });
    });
    window.addEventListener("afterprint", function () {
      opened.forEach(function (d) {
        d.open = false;
      });
      opened = [];
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), makeSortable);
  Array.prototype.forEach.call(document.querySelectorAll("form[data-filter]"), setupFilter);
  focusScrollers();
  window.addEventListener("resize", focusScrollers);
  openForPrint();
})();
