"""Ports on 127.0.0.1 for the tests that start clusters and servers."""
import contextlib
import socket


def free_ports(n):
  """`n` different ports nothing listens on now."""
  with contextlib.ExitStack() as stack:
    held = [stack.enter_context(socket.socket()) for _ in range(n)]
    for s in held:
      s.bind(("127.0.0.1", 0))
    return [s.getsockname()[1] for s in held]


def free_port():
  """A port nothing listens on now."""
  return free_ports(1)[0]
