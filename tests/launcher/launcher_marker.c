/* tests/launcher/launcher_marker.c - a library with one recognisable symbol, put in
 * LD_PRELOAD before the launcher runs to show that the launcher keeps it. */
__attribute__((visibility("default"))) int launcher_test_marker(void)
{
	return 1;
}
