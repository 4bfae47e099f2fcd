"""The bench's "python" contender: Beam Python's AsyncWrapper.

Run by pipelines/bench for each python row, against a prism job server that
the bench started for the run (the Beam options after the script's own, such
as --runner=PortableRunner --job_endpoint=localhost:PORT
--environment_type=LOOPBACK --experiments=prism_disable_sdf_split
--streaming, go to PipelineOptions as given). With LOOPBACK the SDK worker
runs inside this process, so the bench measures this process's CPU time and
peak RSS as the worker's, as it does for the Go rows.

The pipeline is the Go rows' shape: an unbounded source that starts
--lead_s after pipeline construction and emits --per_tick elements every
--tick_s for --stream_s, each created at its tick's scheduled time; a
Reshuffle; AsyncWrapper around a call that sleeps the latency (the element
with index i sleeps --slow_x times as long when i % --slow_every is in
--slow_at); a Reshuffle; and a sink that appends one line per output to
--outputs: "created_us committed_us index window_start_ms window_length_ms"
(length -1 for the global window), from which the bench computes latencies
and rates and checks that every index came out exactly once. The first
element the source hands on writes its time to --first, and the script
prints one JSON line with the job's wall time and submission time.
"""
import argparse
import json
import threading
import time
from typing import Tuple

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.async_dofn import AsyncWrapper
from apache_beam.transforms.periodicsequence import PeriodicImpulse
from apache_beam.transforms.window import IntervalWindow

_lock = threading.Lock()


class SlowCall(beam.DoFn):
    """The same call as the Go contenders' sleep."""

    def __init__(self, latency_s, slow_every, slow_at, slow_x):
        self.latency_s = latency_s
        self.slow_every = slow_every
        self.slow_at = set(slow_at)
        self.slow_x = slow_x

    def process(self, element):
        _, value = element
        d = self.latency_s
        if self.slow_every > 0 and int(value.split("/")[1]) % self.slow_every in self.slow_at:
            d *= self.slow_x
        time.sleep(d)
        yield value


class FanOut(beam.DoFn):
    """Turns the impulse of each of the first `ticks` ticks into per_tick
    keyed elements, created at the tick's time (the impulse's timestamp);
    notes the first time it runs in the file first (created once, whichever
    thread gets there)."""

    def __init__(self, start, tick_s, ticks, per_tick, keys, first):
        self.start, self.tick_s, self.ticks = start, tick_s, ticks
        self.per_tick, self.keys, self.first = per_tick, keys, first

    def process(self, ts):
        try:
            with open(self.first, "x") as f:
                f.write("%d\n" % int(time.time() * 1e6))
        except FileExistsError:
            pass
        t = float(ts)
        n = int(round((t - self.start) / self.tick_s))
        if n >= self.ticks:
            return
        first = n * self.per_tick
        for i in range(first, first + self.per_tick):
            yield ("k%d" % (i % self.keys), "%d/%d" % (int(round(t * 1e6)), i))


class Sink(beam.DoFn):
    """Appends each output to a file: creation and commit times, index and
    window."""

    def __init__(self, path):
        self.path = path

    def setup(self):
        self.f = open(self.path, "a", buffering=1)

    def process(self, value, w=beam.DoFn.WindowParam):
        created_us, index = value.split("/")
        if isinstance(w, IntervalWindow):
            start, length = w.start.micros // 1000, (w.end.micros - w.start.micros) // 1000
        else:
            start, length = 0, -1
        line = "%s %d %s %d %d\n" % (created_us, int(time.time() * 1e6), index, start, length)
        with _lock:
            self.f.write(line)

    def teardown(self):
        self.f.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, required=True)
    p.add_argument("--latency_ms", type=float, required=True)
    p.add_argument("--p", type=int, required=True)
    p.add_argument("--c_s", type=float, required=True, help="AsyncWrapper's callback_frequency (its default is 5 s)")
    p.add_argument("--per_tick", type=int, required=True)
    p.add_argument("--tick_s", type=float, required=True)
    p.add_argument("--stream_s", type=float, required=True)
    p.add_argument("--lead_s", type=float, required=True, help="the source starts this long after pipeline construction")
    p.add_argument("--slow_every", type=int, default=0)
    p.add_argument("--slow_at", default="", help="comma list of i %% slow_every that are slow")
    p.add_argument("--slow_x", type=float, default=1.0)
    p.add_argument("--outputs", required=True, help="file the sink appends its outputs to")
    p.add_argument("--first", required=True, help="file the source's first element writes its time to")
    a, beam_args = p.parse_known_args()
    slow_at = [int(x) for x in a.slow_at.split(",") if x]

    pipe = beam.Pipeline(options=PipelineOptions(beam_args))
    # As in the Go rows: the source starts a lead time after construction,
    # on a tick boundary.
    start = (time.time() + a.lead_s) // a.tick_s * a.tick_s
    ticks = int(round(a.stream_s / a.tick_s))
    wrapper = AsyncWrapper(SlowCall(a.latency_ms / 1000, a.slow_every, slow_at, a.slow_x),
                           parallelism=a.p, callback_frequency=a.c_s)
    _ = (pipe
         | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + ticks * a.tick_s, fire_interval=a.tick_s)
         | beam.ParDo(FanOut(start, a.tick_s, ticks, a.per_tick, a.keys, a.first)).with_output_types(Tuple[str, str])
         # Typed as key-value pairs, so that their coder is a KV coder:
         # prism reads the key of a stateful stage's input (AsyncWrapper's)
         # from it, and fails the stage with "zero length key" otherwise.
         | "AfterSource" >> beam.Reshuffle().with_output_types(Tuple[str, str])
         | beam.ParDo(wrapper)
         | "BeforeSink" >> beam.Reshuffle()
         | beam.ParDo(Sink(a.outputs)))
    submitted = time.time()
    result = pipe.run()
    result.wait_until_finish()
    print(json.dumps({"wall_s": time.time() - submitted, "submitted_us": int(submitted * 1e6)}))


if __name__ == "__main__":
    main()
