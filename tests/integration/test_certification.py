# SPDX-License-Identifier: MIT
"""Varlink certification against the reference implementation, both ways.

varlink-go-certification (Debian package varlink-go) is the reference's certification tool: with
-client it certifies a server implementing org.varlink.certification, without it it is such a
server. It exits 0 whether or not the certification passed, so its output is what counts.
"""
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from daemon import SKIP, binary
from varlink_raw import Connection

TOOL = "varlink-go-certification"
INTERFACE = "org.varlink.certification"
TIMEOUT = 20


def get_interface_description(path, interface):
    """org.varlink.service.GetInterfaceDescription over a raw socket: independent of common/varlink-*.c."""
    with Connection(path, TIMEOUT, blocking_connect=False) as c:
        c.send("org.varlink.service.GetInterfaceDescription", {"interface": interface})
        try:
            reply = c.read()
        except ConnectionResetError:
            raise AssertionError(f"{path}: connection closed before the reply to GetInterfaceDescription") from None
    if "error" in reply:
        raise AssertionError(f"{path}: GetInterfaceDescription({interface}) failed: {reply}")
    return reply["parameters"]["description"]


class Process:
    """A background process with its output in a file; stopped with SIGTERM on exit."""

    def __init__(self, args, dir, name):
        self.args = args
        self.log_path = os.path.join(dir, name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_for_line(self, line, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0, deadline - time.monotonic()))
            if not ready:
                break
            got = self.proc.stdout.readline()
            if not got:
                raise AssertionError(f"{self.args[0]} exited {self.proc.wait()} before printing {line!r}:\n"
                                     f"{self.read_log()}")
            if got.strip() == line:
                return
        raise AssertionError(f"{self.args[0]} did not print {line!r} within {timeout} s:\n{self.read_log()}")

    def wait_for_socket(self, path, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.args[0]} exited {self.proc.returncode} at start:\n{self.read_log()}")
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                return
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.05)
        raise AssertionError(f"{self.args[0]} did not listen on {path} within {timeout} s:\n{self.read_log()}")

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.args[0]} did not stop within {TIMEOUT} s of SIGTERM")
        self.proc.stdout.close()
        self.log.close()
        return self.proc.returncode


class CertificationTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trapstat-certification-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def start(self, args, name):
        p = Process(args, self.dir, name)
        self.addCleanup(p.stop)
        return p

    def test_certification_reference_client(self):
        """The reference client certifies our server (common/varlink-server.c, varlink-connection.c)."""
        path = os.path.join(self.dir, "cert-server")
        server = self.start([binary("VARLINK_CERT_SERVER"), path], "varlink-cert-server")
        server.wait_for_line("ready")

        proc = subprocess.run([TOOL, "-client", f"-varlink=unix:{path}"], capture_output=True, text=True,
                              timeout=TIMEOUT)
        output = proc.stdout + proc.stderr
        print(f"--- {TOOL} -client ---\n{output}")
        self.assertEqual(proc.returncode, 0, output)
        self.assertNotIn("failed", output)
        self.assertIn("End: 'true'", output.splitlines())

        # Our server logs every call it found wrong; a pass must leave nothing there.
        self.assertEqual(server.stop(), 0, server.read_log())
        self.assertEqual(server.read_log(), "")

    def test_certification_interface_description(self):
        """Our server serves org.varlink.certification byte for byte as the reference does."""
        ours = os.path.join(self.dir, "cert-server")
        reference = os.path.join(self.dir, "reference-server")
        server = self.start([binary("VARLINK_CERT_SERVER"), ours], "varlink-cert-server")
        tool = self.start([TOOL, f"-varlink=unix:{reference}"], "reference-server")
        server.wait_for_line("ready")
        tool.wait_for_socket(reference)

        self.assertEqual(get_interface_description(ours, INTERFACE), get_interface_description(reference, INTERFACE))

    def test_certification_reference_server(self):
        """Our client (common/varlink-client.c and varlink-idl*.c) against the reference server."""
        path = os.path.join(self.dir, "reference-server")
        tool = self.start([TOOL, f"-varlink=unix:{path}"], "reference-server")
        tool.wait_for_socket(path)

        proc = subprocess.run([binary("VARLINK_CERT_CLIENT"), path], capture_output=True, text=True,
                              timeout=TIMEOUT)
        output = proc.stdout + proc.stderr
        print(f"--- varlink-cert-client ---\n{output}")
        self.assertEqual(proc.returncode, 0, output)
        self.assertIn("End: {\"all_ok\":true}", output.splitlines())
        self.assertIn("Certification passed", output.splitlines())


if __name__ == "__main__":
    if shutil.which(TOOL) is None:
        print(f"SKIP: {TOOL} is not installed (Debian package varlink-go; scripts/install-deps.sh installs it)",
              file=sys.stderr)
        sys.exit(SKIP)
    unittest.main(verbosity=2)
