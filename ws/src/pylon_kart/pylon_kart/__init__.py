"""A KSP rover as a racing kart: the competition's vehicle interface and a reference stack."""
