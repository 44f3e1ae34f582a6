// Reloads the page every data-refresh seconds (the console's WithRefresh),
// unless the reader is typing in a form or has typed in one. The pages work
// the same without it.
(function () {
  "use strict";
  var seconds = Number(document.body.getAttribute("data-refresh"));
  if (!(seconds > 0)) {
    return;
  }
  var typed = false;
  document.addEventListener("input", function () { typed = true; });
  setInterval(function () {
    var a = document.activeElement;
    if (typed || (a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT"))) {
      return;
    }
    // Drop the notice of an action done: it was said once.
    var url = new URL(window.location.href);
    url.searchParams.delete("done");
    window.location.replace(url.toString());
  }, seconds * 1000);
})();
