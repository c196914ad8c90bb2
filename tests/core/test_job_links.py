"""A job folder does not lead out of itself (issue 40; docs/jobs.md, docs/security.md).

A folder (or a glob) of rank files may hold links: one that stays inside the folder is read;
one whose real path lies outside it (a rank file linked from another folder, a link to
``/etc/passwd``) is skipped with a warning naming it and ``--follow-links``, which reads it.
A file named on the command line is read wherever it leads.  The folder here: ranks 0-5 of
the shared 8-rank job copied in, rank 6 in a subfolder with a link to it beside the others,
rank 7 in another folder with a link to it, and a link to /etc/passwd."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from shared_traces import SHARED

from tracetui.cli import main
from tracetui.cli.entry import build_parser
from tracetui.job.discover import expand_inputs

JOB = SHARED / "multirank" / "param_dlrm_8ranks"
PASSWD = os.path.realpath("/etc/passwd")


@pytest.fixture
def job_dir(tmp_path):
    folder, elsewhere = tmp_path / "job", tmp_path / "elsewhere"
    (folder / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    for r in range(6):
        shutil.copy(JOB / f"rank{r}_kineto.json.gz", folder)
    shutil.copy(JOB / "rank6_kineto.json.gz", folder / "sub")
    (folder / "rank6_kineto.json.gz").symlink_to(os.path.join("sub", "rank6_kineto.json.gz"))  # stays inside
    shutil.copy(JOB / "rank7_kineto.json.gz", elsewhere)
    (folder / "rank7_kineto.json.gz").symlink_to(elsewhere / "rank7_kineto.json.gz")
    (folder / "passwd.json").symlink_to("/etc/passwd")
    return folder


def skipped_lines(folder, *, via: str | None = None) -> list[str]:
    """The warnings for the two links out of ``folder`` (found through ``via``, else the folder)."""
    via = via or str(folder)
    rank7 = os.path.realpath(folder / "rank7_kineto.json.gz")
    return [f"{via}/passwd.json: is a link to {PASSWD}, outside the folder {via}; skipped (--follow-links reads it)",
            f"{via}/rank7_kineto.json.gz: is a link to {rank7}, outside the folder {via}; skipped "
            "(--follow-links reads it)"]


def test_links_out_of_a_folder_are_skipped_with_a_warning(job_dir):
    skipped: list[str] = []
    files = expand_inputs([str(job_dir)], skipped)
    assert [os.path.basename(f) for f in files] == [f"rank{r}_kineto.json.gz" for r in range(7)]
    assert skipped == skipped_lines(job_dir)
    everything = expand_inputs([str(job_dir)], follow_links=True)
    assert [os.path.basename(f) for f in everything] == ["passwd.json"] + [f"rank{r}_kineto.json.gz" for r in range(8)]


def test_a_glob_is_bounded_by_its_folder_and_a_named_file_is_the_users_choice(job_dir, tmp_path):
    skipped: list[str] = []
    files = expand_inputs([f"{job_dir}/rank*_kineto.json.gz"], skipped)
    assert len(files) == 7 and skipped == skipped_lines(job_dir)[1:]
    skipped = []
    named = [str(job_dir / "rank7_kineto.json.gz"), str(job_dir / "passwd.json")]
    assert expand_inputs(named, skipped) == named and skipped == []
    # a folder that is itself a link: what counts is where its files are, against its real path
    (tmp_path / "alias").symlink_to(job_dir)
    skipped = []
    assert len(expand_inputs([str(tmp_path / "alias")], skipped)) == 7
    assert skipped == skipped_lines(job_dir, via=str(tmp_path / "alias"))


def test_every_command_that_takes_a_job_has_follow_links(job_dir):
    parser = build_parser()
    for command in (["open"], ["summary"], ["check"], ["query", "SELECT 1"], ["critical-path"],
                    ["slice", "-o", "out"]):
        args = parser.parse_args([command[0], str(job_dir), *command[1:], "--follow-links"])
        assert args.follow_links is True, command
        assert parser.parse_args([command[0], str(job_dir), *command[1:]]).follow_links is False


def test_slice_names_the_links_it_left_out(job_dir, tmp_path, capsys):
    assert main(["slice", str(job_dir), "--ranks", "0", "-o", str(tmp_path / "out"), "--no-cache"]) == 0
    got = capsys.readouterr()
    assert got.err.splitlines() == [f"tracetui: warning: {w}" for w in skipped_lines(job_dir)]
    assert os.listdir(tmp_path / "out") == ["rank0_kineto.json.gz"]


@pytest.mark.slow
def test_summary_and_query_skip_the_links_or_follow_them(job_dir, capsys):
    assert main(["summary", str(job_dir), "--json", "--workers", "1", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == list(range(7))
    assert doc["warnings"][:2] == skipped_lines(job_dir)
    assert main(["summary", str(job_dir), "--json", "--workers", "1", "--no-cache", "--follow-links"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == list(range(8))  # /etc/passwd is read, and is no trace
    assert "passwd.json: not a Kineto trace or an Execution Trace; skipped" in doc["warnings"]
    sql = "SELECT DISTINCT rank FROM kernels ORDER BY rank"
    assert main(["query", str(job_dir), sql, "--csv", "--no-cache"]) == 0
    got = capsys.readouterr()
    assert got.out == "rank\n" + "".join(f"{r}\n" for r in range(7))
    assert [ln for ln in got.err.splitlines() if "skipped (--follow-links" in ln] == [
        f"tracetui: warning: {w}" for w in skipped_lines(job_dir)]
    assert main(["query", str(job_dir), sql, "--csv", "--no-cache", "--follow-links"]) == 0
    assert capsys.readouterr().out == "rank\n" + "".join(f"{r}\n" for r in range(8))
