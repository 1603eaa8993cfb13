"""Health reports per door: a service is SERVING only on a door that serves
it; asked on the other door it is unknown there (Check: NOT_FOUND, Watch:
SERVICE_UNKNOWN), as a grpc health client expects."""
import grpc

from helpers import Health, rpc_error

SERVICE_UNKNOWN = 3


def test_health_check_is_per_door(start_server, pb):
    s = start_server()
    public = Health(s.channel("public"), pb)
    runner = Health(s.channel("runner"), pb)
    assert public.status("compass.v1.CompassService") == Health.SERVING
    assert runner.status("compass.v1.RunnerService") == Health.SERVING
    for health, other in ((public, "compass.v1.RunnerService"),
                          (runner, "compass.v1.CompassService")):
        err = rpc_error(health.check, other)
        assert err.code() == grpc.StatusCode.NOT_FOUND, err
    # Services both doors serve are SERVING on both.
    for health in (public, runner):
        assert health.status("compass.v1.ResourceService") == Health.SERVING
        assert health.status("grpc.health.v1.Health") == Health.SERVING
        assert health.status("") == Health.SERVING


def test_health_watch_of_a_service_another_door_serves_is_unknown(start_server, pb):
    s = start_server()
    stream = Health(s.channel("public"), pb).watch("compass.v1.RunnerService", timeout=10)
    first = next(stream)
    assert first.status == SERVICE_UNKNOWN
    stream.cancel()
