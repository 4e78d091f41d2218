"""End to end: the server's one clock. With --clock-offset the server lives at 02:00 UTC
tomorrow: a 01:00-06:00 window is open now, and what the server records carries its time,
without the test waiting for the night. A bad offset is refused before anything starts."""
import datetime as dt
import os
import subprocess
import unittest

from cluster import BIN, Cluster


class ClockE2E(unittest.TestCase):
    def test_clock_offset_puts_the_server_into_tonights_window(self):
        now = dt.datetime.now(dt.timezone.utc)
        target = (now + dt.timedelta(days=1)).replace(hour=2, minute=0, second=0, microsecond=0)
        offset = int((target - now).total_seconds())
        c = Cluster(server_args=("--clock-offset", f"{offset}s"))
        try:
            c.cli("schedule", "create", "nightly", "--window", "daily 01:00-06:00", "--tz", "UTC")
            [s] = c.items("schedule", "list")
            self.assertIn("window open until", s["status"], s)
            created = dt.datetime.strptime(s["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
            self.assertEqual(created.date(), target.date(), s)
            self.assertEqual(created.hour, 2, s)
        finally:
            c.close()

    def test_bad_clock_offset_is_refused(self):
        p = subprocess.run([os.path.join(BIN, "tunectl-server"), "--clock-offset", "5 parsecs"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("--clock-offset", p.stderr)


if __name__ == "__main__":
    unittest.main()
