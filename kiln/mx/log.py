"""MXNet's `mx.log`: get_logger with MXNet's format (level letter, time, file:line)."""
import logging
import sys

CRITICAL, ERROR, WARNING, INFO, DEBUG, NOTSET = (logging.CRITICAL, logging.ERROR,
                                                 logging.WARNING, logging.INFO,
                                                 logging.DEBUG, logging.NOTSET)
_FORMAT = "%(levelname).1s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s"


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """A logger writing to `filename` (or stderr) in MXNet's format; made once per name."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_kiln_init", False):
        logger._kiln_init = True
        handler = (logging.FileHandler(filename, filemode or "a") if filename
                   else logging.StreamHandler(sys.stderr))
        handler.setFormatter(logging.Formatter(_FORMAT, "%m%d %H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


getLogger = get_logger
