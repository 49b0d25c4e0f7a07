#pragma once
// Whether this test binary is a sanitizer build (tools/sanitize.sh: ASan+UBSan or TSan). Under a sanitizer our own code
// runs several times slower than LibTorch's and OpenCV's uninstrumented kernels, and the CI host runs two such tests
// at once: checks on timing *proportions* widen their bounds there, and injected delays grow so that they still
// dominate the noise. The Release suite keeps the tight bounds.

namespace yolo11::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace yolo11::test
