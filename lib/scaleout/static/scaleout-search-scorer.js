/* Scale Out: search ranks the chapters first (Sphinx's html_search_scorer).
 * Sphinx's default scorer puts API entries (objects) far above prose: a search for "ring"
 * listed dozens of functions of the API page before the chapter that explains the ring.
 * Here every result on a chapter page gets a bonus over the same match elsewhere, and an
 * object's bonus is kept below a title's. */
var Scorer = {
  score: function (result) {
    var docname = result[0], score = result[4];
    if (/^chapters\//.test(docname)) { return score + 30; }
    if (docname === "cheatsheet" || docname === "intro") { return score + 20; }
    return score;
  },
  objNameMatch: 6,
  objPartialMatch: 3,
  objPrio: { 0: 5, 1: 2, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2
};
