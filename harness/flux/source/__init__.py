"""source-controller's part: what a source artifact holds (ignore rules), objects declared outside
git, chart sources, chart fetching and the chart archive cache.
"""
