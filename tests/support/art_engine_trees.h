// tests/support/art_engine_trees.h — the two persistent-memory ART variants that share the
// ART engine (WOART and ART+CoW), for tests written once and run on both: a gtest type
// list with names by kind (test names read PmartCrash/woart.LeafSplit), and the same trees
// as type-erased factories for value-parameterised tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "index/woart/woart.h"

namespace wort::test {

using PmartTrees = ::testing::Types<woart::Woart, artcow::ArtCow>;

//! Names typed-test instances by the tree's registry kind instead of 0, 1.
struct KindName {
  template <class T>
  static std::string GetName(int) {
    return std::string(T::kKind);
  }
};

//! The same trees, in the same order, as crashsim factories.
inline std::vector<crashsim::Factory> pmart_factories() {
  return {crashsim::factory_of<woart::Woart>(), crashsim::factory_of<artcow::ArtCow>()};
}

}  // namespace wort::test
