"""The real download path (records API, Range resume, md5, safe extraction) against a loopback
Zenodo, through the requests library and the adept-eval command."""

import zipfile

import pytest

from adept_eval.corpora import spec, zenodo
from adept_eval.cli import main
from adept_eval.corpora.corpus import load_corpus, safe_extract
from adept_eval.errors import CorpusError, DownloadError
from testing.zenodo_server import ZenodoServer


@pytest.fixture
def zenodo_server(synthetic_zip, monkeypatch):
    with ZenodoServer(spec.ZENODO_RECORD_ID, {"ADEPT.zip": synthetic_zip}) as server:
        monkeypatch.setenv("ADEPT_EVAL_ZENODO_URL", server.url)
        yield server


def test_prepare_downloads_verifies_and_extracts(zenodo_server, tmp_path, capsys):
    assert main(["prepare", "-q"]) == 0
    out = capsys.readouterr().out
    assert "195" in out and "165" in out
    home = tmp_path / "adept_home"
    assert (home / "ADEPT.zip").exists() and (home / "zenodo_record.json").exists()
    assert zenodo_server.downloads == 1
    # a second run uses the cache: no new download
    assert main(["prepare", "-q"]) == 0
    assert zenodo_server.downloads == 1
    corpus = load_corpus(download=False)
    assert corpus.zenodo_record["metadata"]["license"]["id"] == "cc-by-4.0"


def test_interrupted_download_resumes_with_range(zenodo_server, synthetic_zip, tmp_path):
    size = synthetic_zip.stat().st_size
    zenodo_server.drop_after = size // 3
    zenodo_server.drops_left = 2
    remote = zenodo.describe(spec.ZENODO_RECORD_ID, "ADEPT.zip")
    dest = zenodo.download(remote, tmp_path / "ADEPT.zip", backoff=0.01, progress=False)
    assert dest.read_bytes() == synthetic_zip.read_bytes()
    assert zenodo_server.range_requests, "the retry should have asked for the remaining bytes"
    first = int(zenodo_server.range_requests[0].split("=")[1].rstrip("-"))
    assert 0 < first <= size // 3  # resumed from what had arrived, not from zero


def test_download_gives_up_after_retries(zenodo_server, tmp_path):
    zenodo_server.drop_after = 0  # every attempt is cut before any byte arrives
    zenodo_server.drops_left = 100
    remote = zenodo.describe(spec.ZENODO_RECORD_ID, "ADEPT.zip")
    with pytest.raises(DownloadError, match="3 attempts in a row made no progress"):
        zenodo.download(remote, tmp_path / "ADEPT.zip", retries=2, backoff=0.01, progress=False)
    assert not (tmp_path / "ADEPT.zip").exists()


def test_wrong_checksum_is_rejected_and_cleaned(zenodo_server, tmp_path, capsys):
    zenodo_server.md5_override = "0" * 32
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "does not match" in err
    home = tmp_path / "adept_home"
    assert not (home / "ADEPT.zip").exists() and not (home / "ADEPT.zip.part").exists()


def test_missing_file_in_record(zenodo_server):
    with pytest.raises(DownloadError, match="has no file 'OTHER.zip'"):
        zenodo.describe(spec.ZENODO_RECORD_ID, "OTHER.zip")


def test_unreachable_zenodo_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("ADEPT_EVAL_ZENODO_URL", "http://127.0.0.1:9")
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "could not reach Zenodo at http://127.0.0.1:9 to read record 5117102" in err


def test_corrupt_zip(tmp_path):
    bad = tmp_path / "ADEPT.zip"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(CorpusError, match="not a readable zip"):
        safe_extract(bad, tmp_path / "out")


def test_crc_corruption_detected(synthetic_zip, tmp_path):
    data = bytearray(synthetic_zip.read_bytes())
    with zipfile.ZipFile(synthetic_zip) as zf:
        info = zf.infolist()[5]
    # flip bytes inside the first member's compressed data
    offset = info.header_offset + 30 + len(info.filename) + len(info.extra) + 20
    data[offset:offset + 8] = bytes(b ^ 0xFF for b in data[offset:offset + 8])
    bad = tmp_path / "ADEPT.zip"
    bad.write_bytes(bytes(data))
    with pytest.raises(CorpusError):
        safe_extract(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("member", ["../evil.txt", "/etc/evil.txt", "ADEPT/../../evil.txt"])
def test_zip_slip_members_are_refused(tmp_path, member):
    bad = tmp_path / "ADEPT.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("ADEPT/adept_prompts.json", "{}")
        zf.writestr(member, "owned")
    with pytest.raises(CorpusError, match="unsafe path"):
        safe_extract(bad, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "out").exists()


def test_symlink_members_are_refused(tmp_path):
    bad = tmp_path / "ADEPT.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        info = zipfile.ZipInfo("ADEPT/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(CorpusError, match="symbolic link"):
        safe_extract(bad, tmp_path / "out")


def test_zip_missing_files_lists_them(synthetic_zip, tmp_path, monkeypatch, capsys):
    partial = tmp_path / "partial.zip"
    with zipfile.ZipFile(synthetic_zip) as src, zipfile.ZipFile(partial, "w") as dst:
        for info in src.infolist():
            if "emotion/joy/" in info.filename and "ad01" in info.filename:
                continue
            dst.writestr(info, src.read(info))
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(partial))
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "10 problems" in err
    assert "missing: wav_44khz/emotion/joy/ad01_0004.wav" in err


def test_a_damaged_cached_copy_names_the_cache_and_refetch_restores_it(zenodo_server, tmp_path,
                                                                      capsys, caplog):
    """The cache's ADEPT.zip was verified when downloaded; damaged since (truncated by a full
    disk, say) it was 'not a readable zip archive' with no way out but finding and deleting the
    file. Now the message says it is the cache's copy and names `prepare --refetch`, which
    downloads and extracts it again. A file deleted from the extracted copy, the zip intact,
    needs neither: the copy is extracted again from the zip, with no download."""
    assert main(["prepare", "-q"]) == 0
    home = tmp_path / "adept_home"
    cached = home / "ADEPT.zip"
    cached.write_bytes(cached.read_bytes()[:1000])  # truncated
    capsys.readouterr()
    assert main(["prepare", "-q"]) == 2
    err = capsys.readouterr().err
    assert "not a readable zip" in err and "prepare --refetch" in err and str(home) in err
    assert main(["prepare", "-q", "--refetch"]) == 0
    assert zenodo_server.downloads == 2
    corpus = load_corpus(download=False)
    # a recording deleted by hand from the extracted copy: the zip itself is intact
    victim = next(p for p in corpus.root.rglob("*.wav"))
    victim.unlink()
    assert main(["prepare", "-q"]) == 0
    assert "extracting it again from the zip" in caplog.text
    assert zenodo_server.downloads == 2 and victim.exists()


def test_refetch_refuses_a_corpus_it_does_not_download(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADEPT_EVAL_CORPUS", str(tmp_path / "my_adept"))
    assert main(["prepare", "-q", "--refetch"]) == 2
    assert "ADEPT_EVAL_CORPUS" in capsys.readouterr().err
