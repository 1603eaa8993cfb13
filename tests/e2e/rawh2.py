"""A small raw HTTP/2 client for frame-level e2e checks.

python3-h2's state machine refuses to send much of what these tests need
(bad methods, missing te, garbage, rapid resets), so this speaks frames
directly with hyperframe and hpack (both python3-h2 dependencies) and
records everything the server sends, per stream and per connection.
"""
import select
import socket
import struct
import time

from hpack import Decoder, Encoder
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

NO_ERROR = 0x0
PROTOCOL_ERROR = 0x1
INTERNAL_ERROR = 0x2
FLOW_CONTROL_ERROR = 0x3
STREAM_CLOSED = 0x5
FRAME_SIZE_ERROR = 0x6
REFUSED_STREAM = 0x7
CANCEL = 0x8
COMPRESSION_ERROR = 0x9
ENHANCE_YOUR_CALM = 0xB


def grpc_frame(body, compressed=0):
    """One length-prefixed gRPC message."""
    return struct.pack(">BI", compressed, len(body)) + body


def grpc_messages(data):
    """Splits a DATA byte string into (compressed_flag, body) messages."""
    out = []
    i = 0
    while i + 5 <= len(data):
        flag, length = struct.unpack(">BI", data[i:i + 5])
        assert i + 5 + length <= len(data), (
            "message %d declares %d bytes but only %d arrived" % (len(out), length,
                                                                  len(data) - i - 5))
        out.append((flag, bytes(data[i + 5:i + 5 + length])))
        i += 5 + length
    assert i == len(data), "a partial message header at the end: %r" % (data[i:],)
    return out


class Stream:
    def __init__(self, stream_id):
        self.id = stream_id
        self.header_blocks = []  # [(headers as [(bytes, bytes)], end_stream)] in order
        self.data = bytearray()
        self.data_frames = 0
        self.ended = False  # END_STREAM received
        self.reset_code = None  # RST_STREAM received
        self.events = []  # ("headers"|"data"|"rst", ...) in arrival order

    @property
    def closed(self):
        return self.ended or self.reset_code is not None

    @property
    def headers(self):
        """The first (response) header block as {str: str}."""
        if not self.header_blocks:
            return {}
        return {k.decode(): v.decode("latin-1") for k, v in self.header_blocks[0][0]}

    @property
    def trailers(self):
        """The trailer block ({}), or for Trailers-Only the only block."""
        if not self.header_blocks:
            return {}
        block, _ = self.header_blocks[-1]
        return {k.decode(): v.decode("latin-1") for k, v in block}

    def raw_trailer(self, name):
        if not self.header_blocks:
            return None
        for k, v in self.header_blocks[-1][0]:
            if k == name.encode():
                return v
        return None

    @property
    def trailers_only(self):
        """One HEADERS frame carrying END_STREAM and no DATA at all."""
        return (len(self.header_blocks) == 1 and self.header_blocks[0][1]
                and self.data_frames == 0)

    @property
    def grpc_status(self):
        value = self.trailers.get("grpc-status")
        return int(value) if value is not None else None

    @property
    def http_status(self):
        value = self.headers.get(":status")
        return int(value) if value is not None else None

    def messages(self):
        return grpc_messages(bytes(self.data))


class RawH2:
    def __init__(self, sock):
        self.sock = sock
        self.encoder = Encoder()
        self.decoder = Decoder()
        self.decoder.max_allowed_table_size = 65536
        self.streams = {}
        self.server_settings = {}
        self.settings_frames = 0
        self.goaway = None  # (last_stream_id, error_code, debug_data)
        self.eof = False
        self.bytes_received = 0
        self.next_stream_id = 1
        self._buf = bytearray()
        self._block = None  # (stream_id, bytearray, end_stream) while CONTINUATIONs pend
        self.auto_window_update = True
        self._held_replies = None  # a list while send_bulk is mid-way through its bytes

    @classmethod
    def connect(cls, address, preface=True, settings=None, timeout=5.0):
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cls(sock)
        if preface:
            try:
                conn.send(PREFACE)
                conn.send_frame(SettingsFrame(0, settings=settings or {}))
                # A large connection window so the server is never stalled by us.
                conn.send_frame(WindowUpdateFrame(0, window_increment=(1 << 30)))
            except OSError:
                conn.eof = True  # the server closed at once (e.g. over its connection cap)
        return conn

    # --- Sending --------------------------------------------------------------

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.eof = True
            raise

    def send_frame(self, frame):
        self.send(frame.serialize())

    def new_stream_id(self):
        sid = self.next_stream_id
        self.next_stream_id += 2
        return sid

    def encode_headers(self, headers):
        return self.encoder.encode(headers)

    def headers_frame(self, stream_id, headers, end_stream=False):
        """A serialized HEADERS frame (the stream is tracked from now on)."""
        self.streams.setdefault(stream_id, Stream(stream_id))
        flags = ["END_HEADERS"] + (["END_STREAM"] if end_stream else [])
        frame = HeadersFrame(stream_id, data=self.encode_headers(headers), flags=flags)
        return frame.serialize()

    def send_headers(self, stream_id, headers, end_stream=False):
        self.streams.setdefault(stream_id, Stream(stream_id))
        self.send(self.headers_frame(stream_id, headers, end_stream))

    def send_data(self, stream_id, data, end_stream=False):
        flags = ["END_STREAM"] if end_stream else []
        # Respect the server's max frame size (16 KiB unless it says more).
        max_frame = self.server_settings.get(SettingsFrame.MAX_FRAME_SIZE, 16384)
        chunks = [data[i:i + max_frame] for i in range(0, len(data), max_frame)] or [b""]
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            self.send_frame(DataFrame(stream_id, data=chunk, flags=flags if last else []))

    def send_rst(self, stream_id, code=CANCEL):
        self.send_frame(RstStreamFrame(stream_id, error_code=code))

    @staticmethod
    def grpc_headers(path, method="POST", content_type="application/grpc", te="trailers",
                     extra=()):
        headers = [(":method", method), (":scheme", "http"), (":path", path),
                   (":authority", "localhost")]
        if content_type is not None:
            headers.append(("content-type", content_type))
        if te is not None:
            headers.append(("te", te))
        headers.extend(extra)
        return headers

    def request(self, path, body=None, end_stream=True, **kwargs):
        """Opens a stream with gRPC request headers; BODY (bytes, already
        framed) is sent as one DATA frame.  Returns the stream id."""
        sid = self.new_stream_id()
        self.send_headers(sid, self.grpc_headers(path, **kwargs),
                          end_stream=end_stream and body is None)
        if body is not None:
            self.send_data(sid, body, end_stream=end_stream)
        return sid

    # --- Receiving ------------------------------------------------------------

    def _on_frame(self, frame, raw_length):
        if isinstance(frame, SettingsFrame):
            if "ACK" not in frame.flags:
                self.settings_frames += 1
                self.server_settings.update(frame.settings)
                self._reply(SettingsFrame(0, flags=["ACK"]))
            return
        if isinstance(frame, PingFrame):
            if "ACK" not in frame.flags:
                self._reply(PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"]))
            return
        if isinstance(frame, GoAwayFrame):
            self.goaway = (frame.last_stream_id, frame.error_code, bytes(frame.additional_data))
            return
        if isinstance(frame, WindowUpdateFrame):
            return
        stream = self.streams.setdefault(frame.stream_id, Stream(frame.stream_id))
        if isinstance(frame, (HeadersFrame, ContinuationFrame)):
            if isinstance(frame, HeadersFrame):
                self._block = (frame.stream_id, bytearray(frame.data), "END_STREAM" in frame.flags)
            else:
                assert self._block and self._block[0] == frame.stream_id, "stray CONTINUATION"
                self._block[1].extend(frame.data)
            if "END_HEADERS" in frame.flags:
                sid, block, end = self._block
                self._block = None
                headers = self.decoder.decode(bytes(block), raw=True)
                stream.header_blocks.append((headers, end))
                stream.events.append(("headers", headers, end))
                if end:
                    stream.ended = True
        elif isinstance(frame, DataFrame):
            stream.data.extend(frame.data)
            stream.data_frames += 1
            stream.events.append(("data", bytes(frame.data), "END_STREAM" in frame.flags))
            if "END_STREAM" in frame.flags:
                stream.ended = True
            if self.auto_window_update and raw_length > 0:
                if not stream.closed:
                    self._reply(WindowUpdateFrame(frame.stream_id, window_increment=raw_length))
        elif isinstance(frame, RstStreamFrame):
            stream.reset_code = frame.error_code
            stream.events.append(("rst", frame.error_code))

    def _reply(self, frame):
        """Protocol replies (ACKs, window updates): a closed socket is not
        an error here; pump reports the end.  During send_bulk they wait
        for its end: written now, they could land inside one of its frames
        that is only partly sent."""
        if self._held_replies is not None:
            self._held_replies.append(frame)
            return
        try:
            self.sock.sendall(frame.serialize())
        except OSError:
            pass

    def _parse(self):
        while len(self._buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(bytes(self._buf[:9])))
            if len(self._buf) < 9 + length:
                return
            body = bytes(self._buf[9:9 + length])
            del self._buf[:9 + length]
            frame.parse_body(memoryview(body))
            self._on_frame(frame, length)

    def pump(self, timeout):
        """Reads what arrives within TIMEOUT seconds (at least one recv when
        data is ready).  Returns False once the server closed the socket."""
        if self.eof:
            return False
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not ready:
            return True
        try:
            chunk = self.sock.recv(1 << 20)
        except (ConnectionResetError, OSError):
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.bytes_received += len(chunk)
        self._buf.extend(chunk)
        self._parse()
        return True

    def wait(self, predicate, timeout=5.0):
        """Reads until PREDICATE() is true (returns True), or TIMEOUT passes
        or the connection ends (returns PREDICATE())."""
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(min(left, 0.05)):
                return predicate()
        return True

    def wait_closed(self, stream_id, timeout=5.0):
        """Waits for the stream's END_STREAM or RST_STREAM; returns the Stream."""
        stream = self.streams.setdefault(stream_id, Stream(stream_id))
        self.wait(lambda: stream.closed, timeout)
        return stream

    def wait_reset(self, stream_id, timeout=2.0):
        """Waits for an RST_STREAM on the stream; returns its code or None."""
        stream = self.streams.setdefault(stream_id, Stream(stream_id))
        self.wait(lambda: stream.reset_code is not None, timeout)
        return stream.reset_code

    def wait_eof(self, timeout=5.0):
        """Reads until the server closes the connection; True when it did."""
        return self.wait(lambda: self.eof, timeout)

    def send_bulk(self, data, chunk=65536, read=True):
        """Sends DATA while draining what the server answers, so neither
        side blocks (or, with read=False, never reading: a client that
        only writes).  Returns the bytes sent before the server closed."""
        view = memoryview(data)
        if not read:
            sent = 0
            try:
                while sent < len(view):
                    sent += self.sock.send(view[sent:sent + chunk])
            except (BrokenPipeError, ConnectionResetError, socket.timeout):
                pass
            return sent
        sent = 0
        self._held_replies = []
        self.sock.setblocking(False)
        try:
            while sent < len(view) and not self.eof:
                r, w, _ = select.select([self.sock], [self.sock], [], 5.0)
                if not r and not w:
                    break
                if r:
                    self.sock.settimeout(5.0)
                    self.pump(0)
                    self.sock.setblocking(False)
                if w and not self.eof:
                    try:
                        sent += self.sock.send(view[sent:sent + chunk])
                    except BlockingIOError:
                        pass
                    except (BrokenPipeError, ConnectionResetError):
                        self.eof = True
        finally:
            self.sock.settimeout(5.0)
            held, self._held_replies = self._held_replies, None
            for frame in held:
                self._reply(frame)
        return sent

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
