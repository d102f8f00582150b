"""Running a cell of another Linux architecture on this machine, under QEMU user-mode emulation.

* :mod:`.arches`: the table of architectures (Debian name, QEMU name, cross triplet, byte
  order, the CPU model of each ISA floor), read from ``arches.json``;
* :mod:`.binfmt`: whether the kernel runs that architecture's programs through QEMU
  (binfmt_misc), and QEMU's version;
* :mod:`.roots`: Debian root file systems of an architecture, made once with mmdebstrap and
  cached as tarballs keyed by suite, architecture and package list;
* :mod:`.chroot`: running a command inside such a root, with the work folders bound in;
* :mod:`.cross`: building a wheel for the root's architecture on the host with a cross
  compiler, the target Python's headers and build settings taken from the root.
"""
