// roart/roart_epoch.h — ROART's epoch-based reclamation of unlinked blocks (its DCMM uses
// epochs for lock-free readers, §3.4.2) is the shared kit::EpochReclaimer
// (src/index/kit/epoch.h: the protocol, and why a crash meanwhile leaks nothing). Every
// public operation holds a Pinned for its length; a writer that unlinks a block (its
// unlinking commit already durable) retires it.
#pragma once

#include <cstdint>
#include <optional>

#include "index/kit/epoch.h"

namespace wort::roart {

using Epochs = kit::EpochReclaimer;

//! A pin for one operation — Epochs::Pin for one that calls no user code, NestablePin for a
//! scan, whose visitor may call back into the tree — that on the way out unpins, then frees
//! what no pinned thread can still hold.
template <class P>
class Pinned {
 public:
  explicit Pinned(Epochs& e) noexcept : e_(e) { pin_.emplace(e); }
  ~Pinned() {
    pin_.reset();
    e_.reclaim();
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;

 private:
  Epochs& e_;
  std::optional<P> pin_;
};
using OpPin = Pinned<Epochs::Pin>;
using ScanPin = Pinned<Epochs::NestablePin>;

}  // namespace wort::roart
