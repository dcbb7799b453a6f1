"""Room: cross-cutting helpers with no harness imports: secret redaction, the console voice,
the run-folder lock.

Modules: ``redaction`` (secrets out of every text written), ``console`` (the one voice runs
print in), ``runlock`` (one runner per run folder).
"""
