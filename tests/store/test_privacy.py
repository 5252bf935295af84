"""Private data redaction (store/text/private_data.py) and where the store applies it: Chinese resident
IDs (check digit), bank cards (Luhn), phones, e-mails, in Chinese and English, with valid and
invalid checksums; masked before it is stored, indexed or read by the memory model."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (fixtures)

from memlane.graph import run_memory_graph
from memlane.store.records import (
    Event,
    Memory,
    MemoryUpdate,
    Message,
    ProfileChange,
    ProfileEntry,
    SessionSummary,
    StoreItem,
)
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.text.private_data import (
    EMAIL_TAG,
    ID_NUMBER_TAG,
    PHONE_TAG,
    find_private_data,
    is_resident_id,
    mask_private_data,
    passes_luhn,
    redact,
)
from memlane.tools import remember_fact, write_note

VALID_ID = "11010519491231002X"  # check character X
WRONG_CHECK_ID = "110105194912310021"  # same number, wrong check digit (and not a Luhn number)
BAD_DATE_ID = "110105194913310024"  # month 13 (and not a Luhn number)
VALID_CARD = "4111111111111111"
NON_LUHN_CARD = "4111111111111112"
UNIONPAY_19 = "6222021234567890128"  # 19 digits, Luhn-valid


def test_checksums():
    assert is_resident_id(VALID_ID) and is_resident_id(VALID_ID.lower()) and is_resident_id("110105 19491231 002X")
    assert not is_resident_id(WRONG_CHECK_ID) and not is_resident_id(BAD_DATE_ID)
    assert passes_luhn(VALID_CARD) and passes_luhn(UNIONPAY_19)
    assert not passes_luhn(NON_LUHN_CARD) and not passes_luhn(WRONG_CHECK_ID)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"我的身份证号是{VALID_ID}，请记住。", f"我的身份证号是{ID_NUMBER_TAG}，请记住。"),
        (f"My ID number is {VALID_ID.lower()}.", f"My ID number is {ID_NUMBER_TAG}."),
        ("卡号 4111 1111 1111 1111，谢谢", "卡号 [card ••••1111]，谢谢"),
        (f"card {VALID_CARD} expires soon", "card [card ••••1111] expires soon"),
        (f"银行卡{UNIONPAY_19}", "银行卡[card ••••0128]"),
        ("我的手机号13812345678", f"我的手机号{PHONE_TAG}"),
        ("电话：+86 138-1234-5678", f"电话：{PHONE_TAG}"),
        ("call 138 1234 5678 or 0086 13912345678", f"call {PHONE_TAG} or {PHONE_TAG}"),
        ("call me on +1 (415) 555-2671 tonight", f"call me on {PHONE_TAG} tonight"),
        ("office (415) 555-2671, cell 415.555.2672", f"office {PHONE_TAG}, cell {PHONE_TAG}"),
        ("London: +44 20 7946 0958", f"London: {PHONE_TAG}"),
        ("座机 010-12345678", f"座机 {PHONE_TAG}"),
        ("Paris 06 12 34 56 78", f"Paris {PHONE_TAG}"),
        # full-width, as Chinese input methods type them (issue 34, item 11): read as ASCII, masked as typed
        ("卡号４１１１１１１１１１１１１１１１，谢谢", "卡号[card ••••1111]，谢谢"),
        ("银行卡：６２２２　０２１２　３４５６　７８９０　１２８", "银行卡：[card ••••0128]"),
        ("my card is ４１１１-１１１１-１１１１-１１１１.", "my card is [card ••••1111]."),
        ("手机１３８１２３４５６７８", f"手机{PHONE_TAG}"),
        ("身份证号１１０１０５１９４９１２３１００２Ｘ。", f"身份证号{ID_NUMBER_TAG}。"),
        ("邮箱ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ", f"邮箱{EMAIL_TAG}"),
        # Hong Kong identity cards, the check character verified
        ("我的香港身份证是A123456(3)。", f"我的香港身份证是{ID_NUMBER_TAG}。"),
        ("HKID ab987654(3), or G123456A", f"HKID {ID_NUMBER_TAG}, or {ID_NUMBER_TAG}"),
        # grouped by fours with dots
        ("card 4111.1111.1111.1111 expires soon", "card [card ••••1111] expires soon"),
        ("卡号是４１１１．１１１１．１１１１．１１１１。", "卡号是[card ••••1111]。"),
        ("银行卡 6222.0212.3456.7890.128", "银行卡 [card ••••0128]"),
        ("邮箱是zhang.san@example.com。", f"邮箱是{EMAIL_TAG}。"),
        ("write to Alice.B+news@mail.example.co.uk!", f"write to {EMAIL_TAG}!"),
    ],
)
def test_private_data_is_masked_in_both_languages(text: str, masked: str):
    assert mask_private_data(text) == masked
    assert mask_private_data(masked) == masked  # masking again changes nothing


@pytest.mark.parametrize(
    "text",
    [
        f"身份证号{WRONG_CHECK_ID}（校验位不对）",  # 18 digits, wrong check digit, not Luhn: no ID, no card
        f"ID {BAD_DATE_ID} has no such date",
        f"order {NON_LUHN_CARD} is not a card",  # 16 digits failing Luhn
        "订单号 4111 1111 1111 1112",
        "on 2024-05-01 at 12:30 I paid 1,234,567 yuan",
        "version 1.2.3, host 192.168.1.1, 3.14159",
        "用户 id 12345，房间 808",
        "an @mention is no e-mail",
        "订单号４１１１１１１１１１１１１１１２",  # full-width, failing Luhn
        "order 4111.1111.1111.1112, pi 3.1415926535897932, build 2024.0501.1230.4567.8",
        "数量１２３４５，编号１２３４．５６７８",
        "passport E12345678, 北京市朝阳区建国路88号",  # not masked: the README says so
        "香港身份证 A123456(4)，code AB987654(2)",  # Hong Kong ids with a wrong check character
    ],
)
def test_numbers_failing_their_checksum_and_ordinary_numbers_are_left_alone(text: str):
    # the phone patterns need a non-digit on both sides, so they never bite into a longer number
    assert find_private_data(text) == [] and mask_private_data(text) == text


def test_redaction_can_be_turned_off():
    text = f"ID {VALID_ID}, 13812345678"
    assert redact(text, "off") == text and redact(text, "mask") == f"ID {ID_NUMBER_TAG}, {PHONE_TAG}"


async def test_the_store_masks_before_storing_and_indexing(store: RedisMemoryStore):
    stored = await store.add_messages(
        [
            Message(
                id="m1", user_id="u", session_id="s", role="user", content=f"我的身份证号是{VALID_ID}，手机13812345678"
            ),
            Message(
                id="m2",
                user_id="u",
                session_id="s",
                role="user",
                content=f"My card is {VALID_CARD}, mail me at a.b@example.com",
            ),
            Message(
                id="m3", user_id="u", session_id="s", role="user", content=f"ticket {WRONG_CHECK_ID} stays as written"
            ),
        ]
    )
    assert stored[0].content == f"我的身份证号是{ID_NUMBER_TAG}，手机{PHONE_TAG}"
    recent = [m.content for m in await store.recent_messages("u", "s")]
    assert recent == [
        stored[0].content,
        f"My card is [card ••••1111], mail me at {EMAIL_TAG}",
        f"ticket {WRONG_CHECK_ID} stays as written",
    ]
    for raw in (VALID_ID, "13812345678", VALID_CARD, "a.b@example.com"):
        assert all(raw not in hit.memory.text for hit in await store.search_memories("u", raw))
    assert any(WRONG_CHECK_ID in hit.memory.text for hit in await store.search_memories("u", WRONG_CHECK_ID))

    entry = ProfileEntry(user_id="u", topic="contact", subtopic="phone", content="手机 13912345678")
    event = Event(
        id="e",
        user_id="u",
        summary="The user gave the phone 139 1234 5678.",
        profile_delta=[
            ProfileChange(
                action="add", entry_id=entry.id, topic="contact", subtopic="phone", content="手机 13912345678"
            )
        ],
    )
    await store.apply_update(
        MemoryUpdate(
            user_id="u",
            upsert_profile=[entry],
            event=event,
            memories=[
                Memory(id="n", user_id="u", kind="event", text="email: x@y.org", context="card 4111 1111 1111 1111")
            ],
        )
    )
    assert (await store.get_profile("u"))[0].content == f"手机 {PHONE_TAG}"
    stored_event = (await store.list_events("u"))[0]
    assert (
        stored_event.summary == f"The user gave the phone {PHONE_TAG}."
        and stored_event.profile_delta[0].content == f"手机 {PHONE_TAG}"
    )
    assert (await store.edit_profile_entry("u", entry.id, content="mail z@z.io")).content == f"mail {EMAIL_TAG}"
    await store.set_session_summary(SessionSummary(user_id="u", session_id="s", summary=f"ID {VALID_ID}"))
    assert (await store.get_session_summary("u", "s")).summary == f"ID {ID_NUMBER_TAG}"
    [item] = await store.put_items(
        [
            StoreItem(
                user_id="u",
                namespace=["notes", "u"],
                key="k",
                value={"phone": "+44 20 7946 0958", "n": [f"{VALID_ID}"]},
                text="phone +44 20 7946 0958",
            )
        ]
    )
    assert item.value == {"phone": PHONE_TAG, "n": [ID_NUMBER_TAG]} and item.text == f"phone {PHONE_TAG}"
    exported = (await store.export_user("u")).model_dump_json()
    for raw in (
        VALID_ID,
        "13812345678",
        "13912345678",
        "139 1234 5678",
        VALID_CARD,
        "4111 1111",
        "example.com",
        "x@y.org",
        "z@z.io",
        "7946 0958",  # with its space: a bare "7946" can be part of an export's timestamp
    ):
        assert raw not in exported, raw


async def test_metadata_is_masked_as_texts_are_on_messages_notes_and_profile_entries(store: RedisMemoryStore):
    """Issue 50, item 6: metadata holding a phone number or an e-mail was stored raw on every route."""
    private = {"contact": {"phone": "13812345678", "mails": ["a.b@example.com"]}, "n": 3, "ok": True}
    masked = {"contact": {"phone": PHONE_TAG, "mails": [EMAIL_TAG]}, "n": 3, "ok": True}
    await store.add_messages(
        [Message(id="m", user_id="u", session_id="s", role="user", content="hi", metadata=private)]
    )
    assert (await store.recent_messages("u", "s"))[0].metadata == masked
    await write_note(store, "u", "a note with metadata", session_id="s", metadata=private)
    assert [event.metadata for event in await store.list_events("u")] == [masked]
    again = await write_note(store, "u", "a note with metadata", session_id="s", metadata={"extra": 1})
    assert again.repeat_of is not None and again.memory.metadata == {**masked, "extra": 1}
    private_text = await write_note(store, "u", "call me on 13812345678", session_id="s")
    assert (await write_note(store, "u", "call me on 13812345678", session_id="s")).repeat_of is not None
    assert private_text.repeat_of is None
    await remember_fact(store, "u", "contact", "phone", "call after six", metadata=private)
    assert [e.metadata for e in await store.get_profile("u")] == [masked]
    exported = (await store.export_user("u")).model_dump_json()
    assert "13812345678" not in exported and "a.b@example.com" not in exported


async def test_off_keeps_texts_as_written(store: RedisMemoryStore):
    store = store.with_settings(privacy_redaction="off")
    text = f"身份证 {VALID_ID}，电话 13812345678"
    await store.add_messages([Message(id="m", user_id="u", session_id="s", role="user", content=text)])
    assert [m.content for m in await store.recent_messages("u", "s")] == [text]


async def test_the_memory_model_reads_masked_chat(store: RedisMemoryStore, make_context):
    model = scripted()
    await add_chat(
        store,
        "alice",
        [
            ("user", None, f"我的身份证号是{VALID_ID}，银行卡 {UNIONPAY_19}。"),
            ("user", None, "有事打我电话 138-1234-5678，或者发邮件到 li.lei@example.cn。"),
            ("user", None, f"My passport is elsewhere; the number {WRONG_CHECK_ID} is my library card."),
        ],
    )
    await run_memory_graph("alice", make_context(model))
    prompts = "\n".join(model.prompts)
    assert ID_NUMBER_TAG in prompts and "[card ••••0128]" in prompts and PHONE_TAG in prompts and EMAIL_TAG in prompts
    for raw in (VALID_ID, UNIONPAY_19, "138-1234-5678", "li.lei@example.cn"):
        assert raw not in prompts
    assert WRONG_CHECK_ID in prompts  # a number failing its checksum is no ID: left as said


OLD_ID = "110105491231002"  # the 15-digit pre-1999 form: area 110105, born 1949-12-31, sequence 002


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"我的老身份证号是{OLD_ID}。", f"我的老身份证号是{ID_NUMBER_TAG}。"),
        ("old ID 110105 491231 002, still valid", f"old ID {ID_NUMBER_TAG}, still valid"),
        ("110105-491231-002", ID_NUMBER_TAG),
        ("编号110105491331002", "编号110105491331002"),  # month 13: not a birth date
        ("编号110105490230002", "编号110105490230002"),  # 30 February
        ("订单号910105491231002", "订单号910105491231002"),  # no area starts with 9
        ("Amex 378282246310005", "Amex [card ••••0005]"),  # 15 digits, no birth date: a card
    ],
)
def test_fifteen_digit_resident_ids_with_a_real_birth_date_are_masked(text: str, masked: str):
    assert mask_private_data(text) == masked


# The formats the docs say are masked, each as a user types it in a sentence of its language.
# README.md's and docs/concepts/store.md's tables of masked formats are these rows, rendered by
# `masked_formats_table` (between `<!-- masked-formats:start -->` and `<!-- masked-formats:end -->`):
# a format claimed there is one tested here.
MASKED_FORMATS = [
    ("Chinese resident ID number (check character)", "我的身份证号是{}。", VALID_ID, ID_NUMBER_TAG),
    ("Chinese resident ID number (check character)", "ID {}, spaced", "110105 19491231 002X", ID_NUMBER_TAG),
    ("Chinese resident ID number, 15 digits (before 1999)", "老身份证{}。", OLD_ID, ID_NUMBER_TAG),
    ("Hong Kong identity card (check character)", "香港身份证{}。", "A123456(3)", ID_NUMBER_TAG),
    ("Hong Kong identity card (check character)", "HKID {}.", "AB987654(3)", ID_NUMBER_TAG),
    ("bank card (Luhn)", "card {} expires", "4111 1111 1111 1111", "[card ••••1111]"),
    ("bank card (Luhn)", "银行卡{}", UNIONPAY_19, "[card ••••0128]"),
    ("bank card (Luhn)", "card {} ok", "4111-1111-1111-1111", "[card ••••1111]"),
    ("bank card (Luhn)", "卡号是{}。", "4111.1111.1111.1111", "[card ••••1111]"),
    ("bank card (Luhn)", "card {} ok", "3530 7777-7777.7778", "[card ••••7778]"),
    ("bank card (Luhn)", "卡号{}。", "6222 0212-3456.7890.128", "[card ••••0128]"),
    ("bank card (Luhn)", "卡号{}，谢谢", "４１１１　１１１１　１１１１　１１１１", "[card ••••1111]"),
    ("phone: Chinese mobile", "我的手机号{}", "13812345678", PHONE_TAG),
    ("phone: Chinese mobile", "电话：{}", "+86 138-1234-5678", PHONE_TAG),
    ("phone: Chinese mobile", "call {} now", "0086 13912345678", PHONE_TAG),
    ("phone: Chinese mobile", "手机{}", "138.2345.6783", PHONE_TAG),
    ("phone: Chinese mobile", "my Shanghai number is {}.", "139.1234.5678", PHONE_TAG),
    ("phone: Chinese mobile", "手机{}", "１３８１２３４５６７８", PHONE_TAG),
    ("phone: any + country code", "London: {}", "+44 20 7946 0958", PHONE_TAG),
    ("phone: North American", "call me on {} tonight", "+1 (415) 555-2671", PHONE_TAG),
    ("phone: North American", "office {}, thanks", "(415) 555-2671", PHONE_TAG),
    ("phone: North American", "cell {}", "415.555.0199", PHONE_TAG),
    ("phone: Chinese landline", "座机 {}", "010-12345678", PHONE_TAG),
    ("phone: European national", "Paris {}", "06 12 34 56 78", PHONE_TAG),
    ("e-mail address", "邮箱是{}。", "zhang.san@example.com", EMAIL_TAG),
    ("e-mail address", "write to {}!", "Alice.B+news@mail.example.co.uk", EMAIL_TAG),
    ("e-mail address", "mail {} now", "chen.jie @ example.net", EMAIL_TAG),
    ("e-mail address", "邮箱 {}，谢谢", "li.lei @ example.cn", EMAIL_TAG),
    ("e-mail address", "邮箱{}", "ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ", EMAIL_TAG),
]


def masked_formats_table() -> str:
    """The docs' table of masked formats: one row per format, its examples as typed."""
    rows: dict[str, tuple[list[str], set[str]]] = {}
    for found, _, typed, tag in MASKED_FORMATS:
        examples, tags = rows.setdefault(found, ([], set()))
        examples.append(f"`{typed}`")
        tags.add("[card ••••1234]" if tag.startswith("[card") else tag)
    lines = ["| found | typed as (each one tested) | stored as |", "|---|---|---|"]
    lines += [
        f"| {found} | {', '.join(examples)} | {', '.join(f'`{tag}`' for tag in sorted(tags))} |"
        for found, (examples, tags) in rows.items()
    ]
    return "\n".join(lines)


@pytest.mark.parametrize(("found", "sentence", "typed", "tag"), MASKED_FORMATS, ids=[row[2] for row in MASKED_FORMATS])
def test_every_format_the_docs_claim_is_masked_in_its_sentence(found, sentence, typed, tag):
    assert mask_private_data(sentence.format(typed)) == sentence.format(tag)


@pytest.mark.parametrize("page", ["README.md", "docs/concepts/store.md"])
def test_the_docs_tables_of_masked_formats_are_the_tested_rows(page):
    text = (Path(__file__).resolve().parents[2] / page).read_text(encoding="utf-8")
    start, end = "<!-- masked-formats:start -->", "<!-- masked-formats:end -->"
    assert start in text and end in text, f"{page} has no generated table of masked formats"
    table = text[text.index(start) + len(start) : text.index(end)].strip()
    assert table == masked_formats_table(), f"regenerate {page}'s table with masked_formats_table()"
