"""The compaction calls' bill over more than one call (snapcompact.billing.compaction_calls).

Expected figures are worked here by hand with a bytes/4 line (gemini-2.5-flash: no tokenizer
family, no exact encoding, so each text is ceil(UTF-8 bytes / 4)): a session that hands over
twice pays both requests and both replies.
"""

from __future__ import annotations

from snapcompact.billing import NO_CALLS, CompactionCall, bill_calls

BYTES4 = "gemini-2.5-flash"


def test_two_calls_bill_both_inputs_and_both_outputs():
    # call 1: the request's text is system + "\n" + user = 15 + 1 + 20 = 36 bytes -> 9 tokens;
    #         the reply 40 bytes -> 10 tokens
    # call 2: 15 + 1 + 60 = 76 bytes -> 19 tokens; the reply 81 bytes -> ceil(81 / 4) = 21
    calls = [CompactionCall("s" * 15, "u" * 20, "r" * 40),
             CompactionCall("s" * 15, "u" * 60, "r" * 81)]
    bill = bill_calls(calls, BYTES4)
    assert (bill.calls, bill.input_tokens, bill.output_tokens) == (2, 9 + 19, 10 + 21)
    assert bill.billed_tokens == 59
    assert (bill.model, bill.token_method) == (BYTES4, "estimate:bytes4")


def test_a_call_without_a_reply_bills_its_input_only():
    # the second call's request (76 bytes -> 19) is billed; it returned nothing to count
    calls = [CompactionCall("s" * 15, "u" * 20, "r" * 40), CompactionCall("s" * 15, "u" * 60, "")]
    bill = bill_calls(calls, BYTES4)
    assert (bill.input_tokens, bill.output_tokens) == (28, 10)


def test_no_call_bills_nothing():
    assert bill_calls([], BYTES4) is NO_CALLS and NO_CALLS.billed_tokens == 0
