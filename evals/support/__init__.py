"""Room: cross-cutting helpers with no harness imports: secret redaction, the console voice,
the run-folder lock.
"""
