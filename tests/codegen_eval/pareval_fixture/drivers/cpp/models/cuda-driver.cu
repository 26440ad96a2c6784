// Test fixture: main() for CUDA builds.
#include <cstdio>

class Context;
Context *init();
bool validate(Context *ctx);
void destroy(Context *ctx);

int main() {
    Context *ctx = init();
    std::printf("Validation: %s\n", validate(ctx) ? "PASS" : "FAIL");
    destroy(ctx);
    return 0;
}
