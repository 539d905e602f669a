// Nothing of its own: the object that carries the tests' precompiled header
// (tests/CMakeLists.txt, wort_test_pch), which every test file reuses.
