"""asyncssh loaded lean: liboqs looked for without child processes, X.509 support left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wizard.transports.sshlib import find_shared_library, library_dirs

ROOT = Path(__file__).resolve().parents[2]


def test_a_library_is_found_by_its_versioned_name(tmp_path: Path) -> None:
    (tmp_path / "liboqs.so").write_bytes(b"")
    (tmp_path / "liboqs.so.7").write_bytes(b"")
    (tmp_path / "liboqsx.so.1").write_bytes(b"")
    assert find_shared_library("oqs", [str(tmp_path / "none"), str(tmp_path)]) == str(
        tmp_path / "liboqs.so.7"
    )
    assert find_shared_library("liboqs", [str(tmp_path)]) is None


def test_the_linker_directories_follow_ld_so_conf_includes(
    tmp_path: Path, monkeypatch: object
) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/one::/opt/two")
    (tmp_path / "ld.so.conf.d").mkdir()
    (tmp_path / "ld.so.conf").write_text("# comment\ninclude ld.so.conf.d/*.conf\n/opt/three\n")
    (tmp_path / "ld.so.conf.d" / "b.conf").write_text("/opt/b  # trailing comment\n")
    (tmp_path / "ld.so.conf.d" / "a.conf").write_text("/opt/a\nnot-a-path\n")
    dirs = library_dirs(tmp_path)
    assert dirs[:5] == ["/opt/one", "/opt/two", "/opt/a", "/opt/b", "/opt/three"]
    assert "/usr/lib" in dirs and len(dirs) == len(set(dirs))


_PROBE = """
import json, subprocess, sys, ctypes.util
children = []
real_popen_init = subprocess.Popen.__init__
def spy(self, args, *a, **kw):
    children.append(str(args))
    real_popen_init(self, args, *a, **kw)
subprocess.Popen.__init__ = spy
before = ctypes.util.find_library
from wizard.transports.ssh import _asyncssh
ssh = _asyncssh()
loaded = {
    "children": children,
    "x509": "cryptography.x509" in sys.modules,
    "restored": ctypes.util.find_library is before,
    "same": _asyncssh() is ssh,
    "gcm": "aes128-gcm@openssh.com" in [a.decode() for a in
        __import__("asyncssh.encryption").encryption.get_encryption_algs()],
}
loaded["unblocked"] = sys.modules.get("asyncssh.crypto.x509", 0) is not None
import cryptography.x509
loaded["x509_later"] = hasattr(cryptography.x509, "load_pem_x509_certificate")
print(json.dumps(loaded))
"""


def test_asyncssh_loads_without_child_processes_or_x509() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got == {
        "children": [],
        "x509": False,
        "restored": True,
        "same": True,
        "gcm": True,
        "unblocked": True,
        "x509_later": True,
    }


_ALGS = """
import json, sys
if sys.argv[1] == "lean":
    from wizard.transports.sshlib import load_asyncssh
    load_asyncssh()
from asyncssh import encryption, kex, mac, public_key
print(json.dumps({
    "kex": [a.decode() for a in kex.get_kex_algs()],
    "mac": [a.decode() for a in mac.get_mac_algs()],
    "cipher": [a.decode() for a in encryption.get_encryption_algs()],
    "host_key": [a.decode() for a in public_key.get_public_key_algs()],
}))
"""


def _algorithms(mode: str) -> dict[str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _ALGS, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got: dict[str, list[str]] = json.loads(proc.stdout)
    return got


def test_the_lean_import_offers_exactly_the_algorithms_of_a_plain_one() -> None:
    lean, plain = _algorithms("lean"), _algorithms("plain")
    assert lean == plain
    assert "curve25519-sha256" in lean["kex"] and "ssh-ed25519" in lean["host_key"]
