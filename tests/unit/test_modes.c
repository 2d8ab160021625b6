#include <check.h>
#include "qc_test.h"
int main(void) { return 0; }
