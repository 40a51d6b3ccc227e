"""The batch pipeline: capture sets to a table of decoded messages and to
reports, on Apache Spark (job.py, the only module that imports pyspark) or
in-process (local.py; stats' queries in SQLite, sqlite.py), with the same
planning and the same task code."""
