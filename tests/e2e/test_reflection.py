"""gRPC server reflection (grpc.reflection.v1 and v1alpha) end to end.

Starts agenthubd through tests/e2e/harness.py, takes the reflection.proto
messages from harness.protos() (generated under another file name, since a
Python package named `grpc` would shadow grpcio), and talks
ServerReflectionInfo the way grpcurl does.
"""

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

import harness
V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
V1ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
NOT_FOUND = 5


@pytest.fixture(scope="module")
def pb():
    """The generated grpc.reflection.v1 message module (harness.protos())."""
    return harness.protos().reflection


@pytest.fixture(scope="module")
def server():
    """A running agenthubd with the public door only; yields its HOST:PORT.
    A sanitizer report (a leak of the index, say) fails its stop."""
    s = harness.Server(doors=("public",), stop_timeout=20.0)
    try:
        yield s.public
    finally:
        s.stop()


@pytest.fixture()
def reflect(server, pb):
    """reflect(requests, path=V1) -> responses, over one bidi stream."""
    channel = grpc.insecure_channel(server)

    def call(requests, path=V1):
        method = channel.stream_stream(
            path,
            request_serializer=pb.ServerReflectionRequest.SerializeToString,
            response_deserializer=pb.ServerReflectionResponse.FromString)
        return list(method(iter(requests), timeout=10))

    yield call
    channel.close()


def parse_files(response):
    assert response.WhichOneof("message_response") == "file_descriptor_response", response
    files = []
    for raw in response.file_descriptor_response.file_descriptor_proto:
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
        files.append(fdp)
    return files


def build_pool(files):
    """Adds FILES to a fresh pool, dependencies first, as a client would."""
    pool = descriptor_pool.DescriptorPool()
    by_name = {f.name: f for f in files}
    added = set()

    def add(name):
        if name in added:
            return
        for dep in by_name[name].dependency:
            add(dep)
        pool.Add(by_name[name])
        added.add(name)

    for f in files:
        add(f.name)
    return pool


def list_services(reflect, pb, path=V1):
    (response,) = reflect([pb.ServerReflectionRequest(host="h", list_services="")], path)
    assert response.WhichOneof("message_response") == "list_services_response", response
    return [s.name for s in response.list_services_response.service]


def test_list_services_includes_reflection_and_health(reflect, pb):
    names = list_services(reflect, pb)
    assert "grpc.reflection.v1.ServerReflection" in names
    assert "grpc.reflection.v1alpha.ServerReflection" in names
    assert "grpc.health.v1.Health" in names
    assert len(names) == len(set(names))


def test_response_echoes_host_and_request(reflect, pb):
    request = pb.ServerReflectionRequest(host="example:443", file_containing_symbol="nope.X")
    (response,) = reflect([request])
    assert response.valid_host == "example:443"
    assert response.original_request == request


def test_file_containing_service_comes_with_its_dependencies(reflect, pb):
    (response,) = reflect(
        [pb.ServerReflectionRequest(file_containing_symbol="compass.v1.CompassService")])
    files = parse_files(response)
    names = [f.name for f in files]
    assert names[0] == "compass/v1/services.proto"
    assert "compass/v1/frames.proto" in names
    assert len(names) == len(set(names))
    pool = build_pool(files)
    service = pool.FindServiceByName("compass.v1.CompassService")
    method = service.methods_by_name["SubscribeAgentSession"]
    assert method.output_type.full_name == "compass.v1.AgentSessionFrame"
    assert method.server_streaming


@pytest.mark.parametrize("symbol,file", [
    ("compass.v1.CompassService.SubscribeAgentSession", "compass/v1/services.proto"),
    ("grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"),
    ("grpc.health.v1.HealthCheckRequest", "grpc/health/v1/health.proto"),
    ("compass.v1.AgentSessionState", "compass/v1/frames.proto"),
])
def test_file_containing_symbol(reflect, pb, symbol, file):
    (response,) = reflect([pb.ServerReflectionRequest(file_containing_symbol=symbol)])
    files = parse_files(response)
    assert files[0].name == file


def test_file_by_filename(reflect, pb):
    (response,) = reflect(
        [pb.ServerReflectionRequest(file_by_filename="grpc/health/v1/health.proto")])
    files = parse_files(response)
    assert [f.name for f in files] == ["grpc/health/v1/health.proto"]
    assert files[0].package == "grpc.health.v1"
    assert build_pool(files).FindServiceByName("grpc.health.v1.Health")


def test_unknown_names_are_not_found_and_the_stream_goes_on(reflect, pb):
    responses = reflect([
        pb.ServerReflectionRequest(file_containing_symbol="compass.v1.NoSuchService"),
        pb.ServerReflectionRequest(file_by_filename="no/such.proto"),
        pb.ServerReflectionRequest(
            file_containing_extension=pb.ExtensionRequest(containing_type="compass.v1.X",
                                                          extension_number=100)),
        pb.ServerReflectionRequest(list_services=""),
    ])
    assert len(responses) == 4
    for response in responses[:3]:
        assert response.WhichOneof("message_response") == "error_response", response
        assert response.error_response.error_code == NOT_FOUND
        assert response.error_response.error_message
    assert "compass.v1.NoSuchService" in responses[0].error_response.error_message
    assert responses[3].WhichOneof("message_response") == "list_services_response"


def test_extension_numbers_of_a_message_are_empty(reflect, pb):
    known, unknown = reflect([
        pb.ServerReflectionRequest(
            all_extension_numbers_of_type="grpc.health.v1.HealthCheckRequest"),
        pb.ServerReflectionRequest(all_extension_numbers_of_type="grpc.health.v1.Nope"),
    ])
    assert known.WhichOneof("message_response") == "all_extension_numbers_response"
    assert known.all_extension_numbers_response.base_type_name == \
        "grpc.health.v1.HealthCheckRequest"
    assert list(known.all_extension_numbers_response.extension_number) == []
    assert unknown.error_response.error_code == NOT_FOUND


def test_empty_request_is_invalid_argument(reflect, pb):
    (response,) = reflect([pb.ServerReflectionRequest(host="h")])
    assert response.error_response.error_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]


def test_v1alpha_answers_like_v1(reflect, pb):
    assert sorted(list_services(reflect, pb, V1ALPHA)) == sorted(list_services(reflect, pb))
    (response,) = reflect(
        [pb.ServerReflectionRequest(file_containing_symbol="grpc.health.v1.Health")], V1ALPHA)
    assert parse_files(response)[0].name == "grpc/health/v1/health.proto"


def test_every_listed_service_resolves_like_grpcurl(reflect, pb):
    """list, then file_containing_symbol per service, then link the files."""
    names = list_services(reflect, pb)
    responses = reflect([pb.ServerReflectionRequest(file_containing_symbol=n) for n in names])
    assert len(responses) == len(names)
    for name, response in zip(names, responses):
        pool = build_pool(parse_files(response))
        service = pool.FindServiceByName(name)
        assert service.methods, name


def door_services(address, pb):
    channel = grpc.insecure_channel(address)
    try:
        method = channel.stream_stream(
            V1, request_serializer=pb.ServerReflectionRequest.SerializeToString,
            response_deserializer=pb.ServerReflectionResponse.FromString)
        (response,) = list(method(iter([pb.ServerReflectionRequest(list_services="")]),
                                  timeout=10))
        return sorted(s.name for s in response.list_services_response.service)
    finally:
        channel.close()


def test_each_door_lists_only_the_services_it_serves(start_server, pb):
    s = start_server()
    common = ["compass.v1.ResourceService", "grpc.health.v1.Health",
              "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]
    public = door_services(s.public, pb)
    runner = door_services(s.runner_addr, pb)
    for name in common:
        assert name in public and name in runner, (name, public, runner)
    assert "compass.v1.CompassService" in public
    assert "compass.v1.RunnerService" not in public
    assert "compass.v1.RunnerService" in runner
    assert "compass.v1.CompassService" not in runner
