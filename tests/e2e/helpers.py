"""Client-side helpers shared by the e2e suites: grpcio callables for the
services the server exposes, and the paths the raw HTTP/2 tests use."""
import grpc

from harness import REPO, build_dir  # noqa: F401  (for the suites)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()

CHECK = "/grpc.health.v1.Health/Check"
WATCH = "/grpc.health.v1.Health/Watch"
ECHO = "/agenthub.testing.v1.EchoService/"
UNARY = ECHO + "Unary"
SERVER_STREAM = ECHO + "ServerStream"
CLIENT_STREAM = ECHO + "ClientStream"
BIDI = ECHO + "Bidi"

UNLIMITED = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]


def calls_key(method, status, door="public"):
    return 'agenthub_grpc_calls_total{door="%s",method="%s",status="%s"}' % (door, method, status)


class Health:
    def __init__(self, channel, pb):
        req, resp = pb.health.HealthCheckRequest, pb.health.HealthCheckResponse
        self.pb = pb
        self._check = channel.unary_unary(CHECK, request_serializer=req.SerializeToString,
                                          response_deserializer=resp.FromString)
        self._watch = channel.unary_stream(WATCH, request_serializer=req.SerializeToString,
                                           response_deserializer=resp.FromString)

    def check(self, service="", timeout=10, **kwargs):
        return self._check(self.pb.health.HealthCheckRequest(service=service), timeout=timeout,
                           **kwargs)

    def status(self, service="", timeout=10):
        return self.check(service, timeout).status

    def watch(self, service="", timeout=30):
        return self._watch(self.pb.health.HealthCheckRequest(service=service), timeout=timeout)

    SERVING = 1
    NOT_SERVING = 2


class Echo:
    def __init__(self, channel, pb):
        req, resp = pb.echo.EchoRequest, pb.echo.EchoResponse
        self.pb = pb
        ser, de = req.SerializeToString, resp.FromString
        self.unary = channel.unary_unary(UNARY, request_serializer=ser, response_deserializer=de)
        self.server_stream = channel.unary_stream(SERVER_STREAM, request_serializer=ser,
                                                  response_deserializer=de)
        self.client_stream = channel.stream_unary(CLIENT_STREAM, request_serializer=ser,
                                                  response_deserializer=de)
        self.bidi = channel.stream_stream(BIDI, request_serializer=ser, response_deserializer=de)
        # Sends bytes as they are: for unparsable requests.
        self.unary_raw = channel.unary_unary(UNARY, request_serializer=lambda b: b,
                                             response_deserializer=de)

    def req(self, **kwargs):
        return self.pb.echo.EchoRequest(**kwargs)


def rpc_error(fn, *args, **kwargs):
    """Calls FN expecting a grpc.RpcError; returns it."""
    try:
        result = fn(*args, **kwargs)
    except grpc.RpcError as e:
        return e
    raise AssertionError("expected an RpcError, got %r" % (result,))


def vm_rss_kib(pid):
    """The resident set size of process PID, in KiB (VmRSS of /proc/PID/status)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


class GoodClient:
    """A well-behaved client on a connection of its own, made before an attack
    starts: assert_served() makes one health Check and asserts it is answered
    SERVING within WITHIN seconds (the hostile-input tests' "everyone else is
    still served" rule)."""

    def __init__(self, address, pb, within=0.1):
        self.pb = pb
        self.within = within
        self.channel = grpc.insecure_channel(address)
        self.health = Health(self.channel, pb)
        self.health.check(timeout=10)  # connected and warm before the attack

    def assert_served(self):
        import time
        start = time.monotonic()
        status = self.health.status(timeout=5)
        took = time.monotonic() - start
        assert status == Health.SERVING, status
        assert took <= self.within, "a good client waited %.3f s (limit %.3f s)" % (took,
                                                                                     self.within)
        return took

    def close(self):
        self.channel.close()
