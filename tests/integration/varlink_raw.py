# SPDX-License-Identifier: MIT
"""A raw varlink connection for tests that speak the protocol themselves instead of through
trapstat (and independently of common/varlink-*.c): every message is a JSON object ended by a
NUL byte."""
import json
import socket


class Connection:
    """One connection to a varlink socket: calls are sent, replies read in order (what is read
    past a reply stays in buf for the next)."""

    def __init__(self, path, timeout=20, rcvbuf=None, blocking_connect=True):
        """blocking_connect: the connect waits while the listen backlog is full, and the timeout
        holds from then on; otherwise it covers the connect too, which a full backlog fails."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if not blocking_connect:
            self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.sock.settimeout(timeout)
        self.buf = b""

    def send_message(self, message):
        """Any message, a dict, as it is."""
        self.sock.sendall(json.dumps(message).encode() + b"\0")

    def send(self, method, parameters=None, more=False):
        """A call (with "parameters" always, {} for none); its replies are left to read()."""
        message = {"method": method, "parameters": parameters or {}}
        if more:
            message["more"] = True
        self.send_message(message)

    def read(self):
        """The next message; ConnectionResetError where the daemon closes the connection first."""
        while b"\0" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionResetError("closed by the daemon")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, parameters=None):
        """The reply's parameters; an error reply fails."""
        self.send(method, parameters)
        reply = self.read()
        if "error" in reply:
            raise AssertionError(f"{method}({parameters}) failed: {reply}")
        return reply["parameters"]

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
