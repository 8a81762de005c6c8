"""engine_share.py's split on a hand-made callgrind profile (run: python3 -m unittest test_engine_share)."""
import os
import tempfile
import unittest

import engine_share

# The replayer (self 10) calls the engine's write (inclusive 100: self 60, a hash table 15, the simulated
# store 25); the store calls the device model (5 of its 25). The decoder (self 20) calls a library memcpy (8).
PROFILE = """# callgrind format
version: 1
events: Ir
summary: 138

fn=mcfs_sim::replay::Replayer::run_event
0 10
cfn=mcfs_core::engine::Engine::write
calls=1 0
0 100
cfn=<mcfs_sim::binary::BinaryReader<R> as core::iter::traits::iterator::Iterator>::next
calls=1 0
0 28

fn=mcfs_core::engine::Engine::write
0 60
cfn=hashbrown::raw::RawTable<T,A>::insert
calls=1 0
0 15
cfn=<mcfs_sim::device::metered::MeteredStore<S,K> as mcfs_core::backend::Backend>::write_at
calls=1 0
0 25

fn=hashbrown::raw::RawTable<T,A>::insert
0 15

fn=<mcfs_sim::device::metered::MeteredStore<S,K> as mcfs_core::backend::Backend>::write_at
0 20
cfn=mcfs_device::model::DeviceModel::service
calls=1 0
0 5

fn=mcfs_device::model::DeviceModel::service
0 5

fn=<mcfs_sim::binary::BinaryReader<R> as core::iter::traits::iterator::Iterator>::next
0 20
cfn=__memcpy_avx_unaligned_erms
calls=1 0
0 8

fn=__memcpy_avx_unaligned_erms
0 8
"""


class SplitTest(unittest.TestCase):
    def split(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".out", delete=False) as f:
            f.write(text)
        try:
            return engine_share.split(*engine_share.read_profile(f.name))
        finally:
            os.unlink(f.name)

    def test_the_engine_is_its_calls_less_the_simulated_store(self):
        total, engine, into_engine, back_out = self.split(PROFILE)
        self.assertEqual(total, 10 + 60 + 15 + 20 + 5 + 20 + 8)
        self.assertEqual(engine, 100 - 25)
        self.assertEqual(dict(into_engine), {"mcfs_core::engine::Engine::write": 100})
        self.assertEqual(list(back_out), ["<mcfs_sim::device::metered::MeteredStore<S,K> as mcfs_core::backend::Backend>::write_at"])

    def test_a_symbol_belongs_to_its_own_type_not_the_trait(self):
        self.assertEqual(engine_share.crate_of("<mcfs_sim::X<S> as mcfs_core::backend::Backend>::f"), "mcfs_sim")
        self.assertEqual(engine_share.crate_of("<mcfs_core::clock::ManualClock as mcfs_core::clock::Clock>::now"), "mcfs_core")
        self.assertEqual(engine_share.crate_of("core::ops::function::impls::<impl FnMut<A> for &mut F>::call_mut"), "core")


if __name__ == "__main__":
    unittest.main()
