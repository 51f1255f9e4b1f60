/* The known hot function of program.py: a busy loop the CPU sampler must find on top. */
#include <stdint.h>

uint64_t xsp_hot_spin(uint64_t iterations) {
    volatile uint64_t acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        acc = acc * 6364136223846793005ULL + i;
    }
    return acc;
}
