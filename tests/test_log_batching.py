"""The server's log writes info lines in batches, warnings at once, and everything pending on close."""
from __future__ import annotations

import io
import logging

from platform_server.logs import BatchingStreamHandler
from tests.helpers.eventually import eventually_sync


def make(interval_s: float) -> tuple[logging.Logger, BatchingStreamHandler, io.StringIO]:
    out = io.StringIO()
    handler = BatchingStreamHandler(out, interval_s=interval_s)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger(f"test.batching.{id(out)}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    return logger, handler, out


def test_info_lines_wait_for_the_next_batch_and_keep_their_order() -> None:
    logger, handler, out = make(interval_s=0.2)
    logger.info("first")
    logger.info("second")
    assert out.getvalue() == ""  # not written one by one
    eventually_sync(out.getvalue, what="the batch written")
    assert out.getvalue() == "INFO first\nINFO second\n"
    handler.close()


def test_a_warning_is_written_at_once_with_what_waited_before_it() -> None:
    logger, handler, out = make(interval_s=60)
    logger.info("request line")
    logger.warning("something is off")
    assert out.getvalue() == "INFO request line\nWARNING something is off\n"
    handler.close()


def test_closing_the_handler_writes_what_is_pending() -> None:
    logger, handler, out = make(interval_s=60)
    logger.info("last words")
    handler.close()
    assert out.getvalue() == "INFO last words\n"


def test_records_skip_the_caller_lookup_and_the_fields_the_line_does_not_show() -> None:
    from platform_server import logs

    saved = (logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    try:
        logs.skip_unshown_fields()
        logger, handler, out = make(interval_s=60)
        seen: list[logging.LogRecord] = []
        logger.addFilter(lambda record: seen.append(record) or True)
        logger.warning("request line")
        assert out.getvalue() == "WARNING request line\n"
        record = seen[0]
        assert (record.lineno, record.funcName) == (0, "(unknown function)")  # no walk up the stack
        assert record.thread is None and record.process is None
        handler.close()
    finally:
        logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved
