// C++ functions for tests/user_space.rs: templates, overloads, a
// constructor, an operator, a lambda and an anonymous namespace, whose
// names ksym-pack --elf must demangle as c++filt does.
#include <cstdio>

namespace shapes {
template <typename T> struct Box {
	T v;
	explicit Box(T x) : v(x) {}
	__attribute__((noinline)) T twice() const { return v + v; }
	Box operator+(const Box &o) const { return Box(v + o.v); }
};

__attribute__((noinline)) int area(int w, int h) { return w * h; }
__attribute__((noinline)) double area(double r) { return 3.14159 * r * r; }
} // namespace shapes

namespace {
__attribute__((noinline)) long hidden(const char *s, unsigned long n)
{
	long t = 0;
	for (unsigned long i = 0; i < n && s[i]; i++)
		t += s[i];
	return t;
}
} // namespace

int main(int argc, char **argv)
{
	shapes::Box<int> a(argc), b(2);
	shapes::Box<double> c(1.5);
	auto f = [&](int k) { return (a + b).twice() * k; };
	std::printf("%d %f %d %f %ld\n", f(3), c.twice(), shapes::area(argc, 4),
		    shapes::area(2.0), hidden(argv[0], 8));
	return 0;
}
