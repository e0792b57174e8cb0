//! The label selector grammar: a small lexer and a recursive-descent parser.

use super::{Operator, ParseError, Requirement};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Comma,
    Open,
    Close,
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    Gt,
    Lt,
}

impl Token {
    fn text(&self) -> String {
        match self {
            Self::Ident(s) => s.clone(),
            Self::Comma => ",".into(),
            Self::Open => "(".into(),
            Self::Close => ")".into(),
            Self::Eq => "=".into(),
            Self::DoubleEq => "==".into(),
            Self::NotEq => "!=".into(),
            Self::Bang => "!".into(),
            Self::Gt => ">".into(),
            Self::Lt => "<".into(),
        }
    }
}

fn lex(input: &str) -> Vec<(usize, Token)> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        let token = match c {
            c if c.is_whitespace() => continue,
            ',' => Token::Comma,
            '(' => Token::Open,
            ')' => Token::Close,
            '>' => Token::Gt,
            '<' => Token::Lt,
            '=' | '!' => {
                if chars.peek().is_some_and(|(_, n)| *n == '=') {
                    chars.next();
                    if c == '=' {
                        Token::DoubleEq
                    } else {
                        Token::NotEq
                    }
                } else if c == '=' {
                    Token::Eq
                } else {
                    Token::Bang
                }
            }
            _ => {
                let mut end = pos + c.len_utf8();
                while let Some(&(p, n)) = chars.peek() {
                    if n.is_whitespace() || ",()=!<>".contains(n) {
                        break;
                    }
                    end = p + n.len_utf8();
                    chars.next();
                }
                Token::Ident(input[pos..end].to_owned())
            }
        };
        tokens.push((pos, token));
    }
    tokens
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(_, t)| t)
    }

    fn next(&mut self) -> Option<(usize, Token)> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn unexpected(expected: &'static str, found: Option<(usize, Token)>) -> ParseError {
        match found {
            Some((position, token)) => ParseError::UnexpectedToken {
                expected,
                found: token.text(),
                position,
            },
            None => ParseError::UnexpectedEnd { expected },
        }
    }

    fn ident(&mut self, expected: &'static str) -> Result<String, ParseError> {
        match self.next() {
            Some((_, Token::Ident(s))) => Ok(s),
            other => Err(Self::unexpected(expected, other)),
        }
    }

    /// A single value after `=`, `==`, `!=`: may be empty when followed by `,` or the end.
    fn single_value(&mut self) -> Result<String, ParseError> {
        match self.peek() {
            None | Some(Token::Comma) => Ok(String::new()),
            _ => self.ident("a value"),
        }
    }

    /// `( v1, v2, … )`; an empty slot between commas is the empty value, and `()` is the set
    /// holding only the empty value (as apimachinery reads it, and as `in ("")` prints).
    fn value_set(&mut self) -> Result<Vec<String>, ParseError> {
        match self.next() {
            Some((_, Token::Open)) => {}
            other => return Err(Self::unexpected("'('", other)),
        }
        let mut values = Vec::new();
        if self.peek() == Some(&Token::Close) {
            self.next();
            values.push(String::new());
            return Ok(values);
        }
        loop {
            match self.peek() {
                Some(Token::Comma | Token::Close) => values.push(String::new()),
                _ => values.push(self.ident("a value")?),
            }
            match self.next() {
                Some((_, Token::Comma)) => continue,
                Some((_, Token::Close)) => return Ok(values),
                other => return Err(Self::unexpected("',' or ')'", other)),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, ParseError> {
        if self.peek() == Some(&Token::Bang) {
            self.next();
            let key = self.ident("a label key")?;
            return Requirement::new(key, Operator::DoesNotExist, Vec::<String>::new());
        }
        let key = self.ident("a label key or '!'")?;
        let op = match self.peek() {
            None | Some(Token::Comma) => {
                return Requirement::new(key, Operator::Exists, Vec::<String>::new());
            }
            Some(_) => self.next(),
        };
        let (operator, values) = match op {
            Some((_, Token::Eq)) => (Operator::Equals, vec![self.single_value()?]),
            Some((_, Token::DoubleEq)) => (Operator::DoubleEquals, vec![self.single_value()?]),
            Some((_, Token::NotEq)) => (Operator::NotEquals, vec![self.single_value()?]),
            Some((_, Token::Gt)) => (Operator::GreaterThan, vec![self.ident("an integer")?]),
            Some((_, Token::Lt)) => (Operator::LessThan, vec![self.ident("an integer")?]),
            Some((_, Token::Ident(word))) if word == "in" => (Operator::In, self.value_set()?),
            Some((_, Token::Ident(word))) if word == "notin" => {
                (Operator::NotIn, self.value_set()?)
            }
            other => {
                return Err(Self::unexpected(
                    "an operator (=, ==, !=, in, notin, >, <)",
                    other,
                ));
            }
        };
        Requirement::new(key, operator, values)
    }
}

/// Parses a whole selector into its requirements, sorted by key.
pub(crate) fn parse(input: &str) -> Result<Vec<Requirement>, ParseError> {
    let mut parser = Parser {
        tokens: lex(input),
        at: 0,
    };
    let mut requirements = Vec::new();
    if parser.peek().is_none() {
        return Ok(requirements);
    }
    loop {
        requirements.push(parser.requirement()?);
        match parser.next() {
            None => break,
            Some((_, Token::Comma)) => continue,
            other => return Err(Parser::unexpected("',' or the end", other)),
        }
    }
    requirements.sort_by(|a, b| a.key().cmp(b.key()));
    Ok(requirements)
}
