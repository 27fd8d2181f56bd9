"""Tests for calculator.py. The agent may not change this file."""

import unittest

from calculator import add, multiply, subtract


class CalculatorTest(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)

    def test_add_negative(self) -> None:
        self.assertEqual(add(-2, -3), -5)

    def test_subtract(self) -> None:
        self.assertEqual(subtract(5, 3), 2)

    def test_multiply(self) -> None:
        self.assertEqual(multiply(4, 2.5), 10)


if __name__ == "__main__":
    unittest.main()
