#include "bench/zipf.h"

#include <cmath>
#include <numeric>

namespace wort::bench {

std::string_view to_string(Choice c) noexcept {
  switch (c) {
    case Choice::uniform: return "uniform";
    case Choice::zipfian: return "zipfian";
    case Choice::selfsimilar: return "selfsimilar";
    case Choice::shuffled: return "shuffled";
  }
  return "?";
}

bool parse(std::string_view s, Choice& out) noexcept {
  for (auto c : {Choice::uniform, Choice::zipfian, Choice::selfsimilar, Choice::shuffled}) {
    if (s == to_string(c)) {
      out = c;
      return true;
    }
  }
  return false;
}

double KeyChooser::zeta(std::uint64_t n, double theta) noexcept {
  double sum = 0;
  for (std::uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

KeyChooser::KeyChooser(Choice c, std::uint64_t n, double param)
    : choice_(c), n_(n == 0 ? 1 : n), param_(param) {
  if (choice_ == Choice::zipfian) {
    if (!(param_ > 0 && param_ < 1)) param_ = 0.99;
    const double theta = param_;
    zetan_ = zeta(n_, theta);
    const double zeta2 = zeta(2, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(n_), 1 - theta)) / (1 - zeta2 / zetan_);
    half_pow_theta_ = 1 + std::pow(0.5, theta);
  } else if (choice_ == Choice::selfsimilar) {
    if (!(param_ > 0 && param_ < 0.5)) param_ = 0.2;
  } else if (choice_ == Choice::shuffled) {
    stride_ = static_cast<std::uint64_t>(static_cast<double>(n_) * 0.6180339887);
    while (stride_ > 1 && std::gcd(stride_, n_) != 1) --stride_;
    if (stride_ == 0) stride_ = 1;
  }
}

std::uint64_t KeyChooser::once(std::uint64_t i) const noexcept {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(i) * stride_) % n_);
}

std::uint64_t KeyChooser::zipf(Rng& rng) noexcept {
  const double u = rng.real();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return n_ > 1 ? 1 : 0;
  const auto r = static_cast<std::uint64_t>(static_cast<double>(n_) *
                                            std::pow(eta_ * u - eta_ + 1, alpha_));
  return r < n_ ? r : n_ - 1;
}

std::uint64_t KeyChooser::next(Rng& rng) noexcept {
  switch (choice_) {
    case Choice::uniform:
    case Choice::shuffled: return rng.below(n_);  // not used: shuffled draws call once()
    case Choice::zipfian: return zipf(rng);
    case Choice::selfsimilar: {
      const double h = param_;
      const auto r = static_cast<std::uint64_t>(
          static_cast<double>(n_) * std::pow(rng.real(), std::log(h) / std::log(1.0 - h)));
      return r < n_ ? r : n_ - 1;
    }
  }
  return 0;
}

}  // namespace wort::bench
