# Workload for the perl preload test: hashes, arrays, regular expressions, sorting,
# string building and sprintf. Output is deterministic.
use strict;
use warnings;

my $seed = 12345;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed; }

my %count;
my @words;
for my $i (1 .. 60000) {
	my $w = join '', map { chr(97 + rnd() % 26) } 1 .. (1 + rnd() % 8);
	push @words, $w;
	$count{$w}++;
}
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 9];
print "distinct words: ", scalar(keys %count), "\n";
print "top: ", join(',', map { "$_=$count{$_}" } @top), "\n";

my $text = join ' ', @words;
my @vowel_runs = ($text =~ /([aeiou]{3,})/g);
(my $upper = $text) =~ s/\b(\w)(\w*)\b/\U$1\E$2/g;
print "vowel runs: ", scalar(@vowel_runs), ", text length ", length($upper), "\n";

my %tree;
for my $i (1 .. 20000) {
	my $k = rnd() % 1000;
	push @{ $tree{$k}{list} }, $i;
	$tree{$k}{sum} += $i;
}
my $total = 0;
$total += $tree{$_}{sum} for keys %tree;
my @sorted = sort { $a <=> $b } map { scalar @{ $tree{$_}{list} } } keys %tree;
print "tree: ", scalar(keys %tree), " keys, total $total, median ", $sorted[@sorted / 2], "\n";

my $s = '';
$s .= sprintf("%05d:%s;", $_, $words[$_]) for 0 .. 19999;
print "built string of ", length($s), " bytes\n";
delete $count{$_} for grep { length($_) < 4 } keys %count;
print "after delete: ", scalar(keys %count), "\n";
