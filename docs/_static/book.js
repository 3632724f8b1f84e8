// Opened from file://, the browser refuses fetch(), and Sphinx's search would log an error
// for each result while fetching the page to show its summary. From file:// the results
// are listed without summaries; over HTTP nothing changes. (Must run after
// documentation_options.js and before searchtools.js: see html_js_files in conf.py.)
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}
