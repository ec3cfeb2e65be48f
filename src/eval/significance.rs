//! Whether a difference in Hits@1 between two runs could be chance: exact tests small enough
//! to check by hand, on the counts the runs' records give (no sampling, no dependency).

/// McNemar's exact test on paired questions: two-sided, on the questions only A got right
/// (`only_a`) and only B got right (`only_b`), which are as likely either way if the runs are
/// equally good. 1 when they never differ.
pub fn mcnemar_exact(only_a: usize, only_b: usize) -> f64 {
    let n = only_a + only_b;
    if n == 0 {
        return 1.0;
    }
    let ln = LnFactorials::up_to(n);
    let tail: f64 = (0..=only_a.min(only_b)).map(|i| (ln.choose(n, i) - n as f64 * std::f64::consts::LN_2).exp()).sum();
    (2.0 * tail).min(1.0)
}

/// Fisher's exact test, two-sided, on two runs' right answers (`hits_a` of `n_a`, `hits_b` of
/// `n_b`) taken as independent samples: the probability, with the margins fixed, of a table
/// at most as likely as the one seen.
pub fn fisher_exact(hits_a: usize, n_a: usize, hits_b: usize, n_b: usize) -> f64 {
    let (hits_a, hits_b) = (hits_a.min(n_a), hits_b.min(n_b));
    let (hits, n) = (hits_a + hits_b, n_a + n_b);
    if n == 0 {
        return 1.0;
    }
    let ln = LnFactorials::up_to(n);
    let p = |k: usize| (ln.choose(n_a, k) + ln.choose(n_b, hits - k) - ln.choose(n, hits)).exp();
    let seen = p(hits_a);
    let (low, high) = (hits.saturating_sub(n_b), hits.min(n_a));
    // Tables as likely as the one seen, up to rounding, count as at most as likely.
    let total: f64 = (low..=high).map(p).filter(|&q| q <= seen * (1.0 + 1e-7)).sum();
    total.min(1.0)
}

struct LnFactorials(Vec<f64>);

impl LnFactorials {
    fn up_to(n: usize) -> Self {
        let mut table = Vec::with_capacity(n + 1);
        table.push(0.0);
        for i in 1..=n {
            table.push(table[i - 1] + (i as f64).ln());
        }
        Self(table)
    }

    /// ln C(n, k), for k ≤ n ≤ the table's size.
    fn choose(&self, n: usize, k: usize) -> f64 {
        self.0[n] - self.0[k] - self.0[n - k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn mcnemar_matches_the_binomial_by_hand() {
        // 8 against 1: 2 * (1 + 9) / 2^9 = 0.0390625.
        assert!(close(mcnemar_exact(8, 1), 0.0390625), "{}", mcnemar_exact(8, 1));
        assert!(close(mcnemar_exact(1, 8), 0.0390625));
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
    }

    #[test]
    fn fisher_matches_known_tables() {
        // The tea-tasting table [[3, 1], [1, 3]]: two-sided p = 0.4857.
        assert!(close(fisher_exact(3, 4, 1, 4), 0.485714), "{}", fisher_exact(3, 4, 1, 4));
        // 4/10 against 1/10 (the example): p = 0.3034.
        assert!(close(fisher_exact(4, 10, 1, 10), 0.303406), "{}", fisher_exact(4, 10, 1, 10));
        assert!(close(fisher_exact(5, 10, 5, 10), 1.0));
        assert_eq!(fisher_exact(0, 0, 0, 0), 1.0);
        // Counts past their totals (a damaged record file) do not panic.
        assert!(fisher_exact(9, 5, 0, 5) <= 1.0);
    }
}
