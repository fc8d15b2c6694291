# SPDX-License-Identifier: MIT
# hash.pl N - Perl workload of bench/run-speed: a hash of N string keys and string
# values built, read back, half deleted, then dropped.  Perl uses the system malloc.
use strict;
use warnings;

my $count = shift @ARGV;
my %table;
$table{"key-$_"} = "value-" . ($_ * 7) for 1 .. $count;
my $total = 0;
$total += length $table{$_} for keys %table;
delete $table{"key-$_"} for 1 .. int($count / 2);
undef %table;
print "$total\n";
