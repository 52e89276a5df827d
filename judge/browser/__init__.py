"""The page's Run in Pyodide (page_run): the same judging as Submit (judge.judging) over the
runner's plugin, without a sandbox or hidden tests. Bundled by the front-end build with
judge.judging and judge.runner, so it imports nothing else of the judge."""
