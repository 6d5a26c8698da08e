"""A second device-generic file: everything passes."""
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests


class TestSecond(TestCase):
    def test_mul(self, device):
        x = torch.ones(3, device=device)
        self.assertEqual((x * 3).sum().item(), 9.0)


instantiate_device_type_tests(TestSecond, globals())

if __name__ == "__main__":
    run_tests()
