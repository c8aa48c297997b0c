//! The model type catalog (001 §3.1), stored in header bytes 6-7.

use alloc::borrow::ToOwned;

use crate::error::{Error, Result};

macro_rules! model_types {
    ($($variant:ident = $id:literal, $name:literal, $doc:literal;)*) => {
        /// A model type of 001 §3.1.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ModelType {
            $(#[doc = $doc] $variant,)*
        }

        impl ModelType {
            /// Every type of the catalog.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The header's `model_type` value.
            #[must_use]
            pub const fn id(self) -> u16 {
                match self { $(Self::$variant => $id,)* }
            }

            /// The spec's name (`"LINEAR_REGRESSION"`).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }

            /// The type with header value `id`, if the catalog has one.
            #[must_use]
            pub const fn from_id(id: u16) -> Option<Self> {
                match id { $($id => Some(Self::$variant),)* _ => None }
            }
        }
    };
}

model_types! {
    LinearRegression = 0x0001, "LINEAR_REGRESSION", "OLS/Ridge/Lasso.";
    LogisticRegression = 0x0002, "LOGISTIC_REGRESSION", "GLM (binomial).";
    DecisionTree = 0x0003, "DECISION_TREE", "CART/ID3.";
    RandomForest = 0x0004, "RANDOM_FOREST", "Bagging ensemble.";
    GradientBoosting = 0x0005, "GRADIENT_BOOSTING", "Boosting ensemble.";
    KMeans = 0x0006, "KMEANS", "Lloyd's algorithm.";
    Pca = 0x0007, "PCA", "Principal components.";
    NaiveBayes = 0x0008, "NAIVE_BAYES", "Gaussian naive Bayes.";
    Knn = 0x0009, "KNN", "K-nearest neighbours.";
    Svm = 0x000A, "SVM", "Support vector machine.";
    NgramLm = 0x0010, "NGRAM_LM", "Markov chains.";
    Tfidf = 0x0011, "TFIDF", "TF-IDF vectorizer.";
    CountVectorizer = 0x0012, "COUNT_VECTORIZER", "Bag of words.";
    NeuralSequential = 0x0020, "NEURAL_SEQUENTIAL", "Feed-forward network.";
    NeuralCustom = 0x0021, "NEURAL_CUSTOM", "Custom architecture.";
    ContentRecommender = 0x0030, "CONTENT_RECOMMENDER", "Content-based filtering.";
    Custom = 0x00FF, "CUSTOM", "User extensions.";
}

impl ModelType {
    /// The type named `name` (the spec's name, case-insensitive, `-` accepted for `_`).
    ///
    /// # Errors
    /// `UnknownModelType` for an unknown name.
    pub fn from_name(name: &str) -> Result<Self> {
        let wanted = name.replace('-', "_");
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| Error::UnknownModelType {
                name: name.to_owned(),
            })
    }

    /// Checks that a file's header type `found` is this type.
    ///
    /// # Errors
    /// `ModelTypeMismatch` otherwise (001 §5.1).
    pub const fn expect(self, found: u16) -> Result<()> {
        if found == self.id() {
            Ok(())
        } else {
            Err(Error::ModelTypeMismatch {
                expected: self.id(),
                found,
            })
        }
    }
}

impl core::fmt::Display for ModelType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_has_seventeen_types_with_unique_ids() {
        assert_eq!(ModelType::ALL.len(), 17);
        for t in ModelType::ALL {
            assert_eq!(ModelType::from_id(t.id()), Some(*t));
            assert_eq!(ModelType::from_name(t.name()).unwrap(), *t);
        }
        assert_eq!(ModelType::from_id(0x0013), None);
    }

    #[test]
    fn expect_names_both_types() {
        let error = ModelType::Knn.expect(0x0001).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::ModelTypeMismatch);
    }
}
