#!/usr/bin/env python3
"""Reference outputs for tests/data/wordpiece_tokenizer_test.cpp.

A line-by-line transcription of Hugging Face's BasicTokenizer(do_lower_case=True) and
WordpieceTokenizer (transformers/models/bert/tokenization_bert.py), using Python's full
unicodedata, so the C++ tokenizer's expected tokens are BERT's and not worked out from the C++.
Run with Debian's python3: python3 tests/data/tools/wordpiece_reference.py
"""
import unicodedata

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", ",", ".", "un", "##aff", "##able", "hello",
         "world", "##s", "play", "##ing", "cafe", "naive", "\u4e2d", "\u6587", "\u00e6", "ss",
         "\u00df", "e", "i", "istanbul", "##world", "\u201c", "\u201d", "\u2014", "\u2026",
         "\u2018", "\u2019", "\u00bf"]


def is_whitespace(c):
    if c in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(c) == "Zs"


def is_control(c):
    if c in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(c).startswith("C")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_chinese(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic(text):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or is_control(c):
            continue
        out.append(" " if is_whitespace(c) else c)
    text = "".join(out)
    text = "".join(f" {c} " if is_chinese(ord(c)) else c for c in text)
    tokens = []
    for token in text.strip().split():
        token = unicodedata.normalize("NFD", token.lower())
        token = "".join(c for c in token if unicodedata.category(c) != "Mn")
        words, new = [], True
        for c in token:
            if is_punctuation(c):
                words.append([c])
                new = True
            else:
                if new:
                    words.append([])
                new = False
                words[-1].append(c)
        tokens.extend("".join(w) for w in words)
    return " ".join(tokens).split()


def wordpiece(text, vocab):
    out = []
    for token in text.split():
        chars = list(token)
        if len(chars) > 100:
            out.append("[UNK]")
            continue
        bad, start, subs = False, 0, []
        while start < len(chars):
            end, cur = len(chars), None
            while start < end:
                s = "".join(chars[start:end])
                if start > 0:
                    s = "##" + s
                if s in vocab:
                    cur = s
                    break
                end -= 1
            if cur is None:
                bad = True
                break
            subs.append(cur)
            start = end
        out.extend(["[UNK]"] if bad else subs)
    return out


CASES = [
    "UNaffable Hello, world!",
    "H\u00e9llo",
    "unknownword",
    "\u4e2d\u6587abc\u6587",
    "plays playing",
    "Caf\u00e9 na\u00efve \u00c6 SS \u00df \u00bfHELLO?",
    "\u201cHello\u201d \u2014 world\u2026 \u2018the\u2019",
    "hello\u00a0world\u3000the\u200bworld\u00adplay",
    "e\u0301 \u0130stanbul",
    "a" * 101,
    "world" * 20,
    "world" * 20 + "s",
    "ab\xff\u00e9 \ufffd\u0000the",
    "\tHELLO\r\nWORLD\x01\x7f",
]

if __name__ == "__main__":
    vocab = set(VOCAB)
    for case in CASES:
        print(repr(case), "->", wordpiece(" ".join(basic(case)), vocab))
