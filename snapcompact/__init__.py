import logging as _logging

# The library logs under "snapcompact.*" and never configures output: the application decides
# (Hydra's job log for the eval harness). The NullHandler keeps Python's last-resort handler from
# printing the library's warnings when the application has configured nothing.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
