"""The report stage (rules/report.smk): every probe that ran, shown from its declaration and its plan.

- plan.py: what the report reads and shows, from the probes' plans (the rule's inputs and params)
- overview.py: the model-by-probe overview (tables/overview.csv), its heat map and the first screen
  (report/overview.json: direction, n, marks and verdict of every headline figure)
- markdown.py: report.md
- pages.py: the pages of the HTML report (every table, the inputs, the runtimes, the first screen)
- provenance.py: the provenance the HTML report's first screen includes
- console.py: the overview printed at the end of `make run`
- build.py: the rule's job, the steps above in order
"""
