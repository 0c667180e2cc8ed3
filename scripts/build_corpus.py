"""Build the course's generated English-Russian corpus, data/gen_en_ru/.

One closed domain (people and their jobs, family, places in town, things,
food, time), written out from a lexicon with every Russian word form spelled
out by hand (no morphology library) and a fixed list of sentence templates.
Each template is one sentence structure; it says which phenomena it shows
(gender, past_agreement, numbers, negation, aspect, questions, cases,
adjective_agreement, relative_clause, two_clauses) and how many clauses it has.

    .venv/bin/python scripts/build_corpus.py             # rewrite data/gen_en_ru/
    .venv/bin/python scripts/build_corpus.py --out DIR   # build into another folder
    .venv/bin/python scripts/build_corpus.py --sample 100  # print 100 random pairs

Everything is deterministic (no random module: choices are made by SHA-256 of
the text), so two builds give byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tokenizers import Tokenizer

from tfs.bpe import check_round_trip, train_course_tokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "data" / "gen_en_ru"

COURSE_PAIR = (
    "The researcher said she was exhausted.",
    "Исследовательница сказала, что вымоталась.",
)
COURSE_TWIN = (
    "The researcher said he was exhausted.",
    "Исследователь сказал, что вымотался.",
)

VOCAB_SIZE = 1200  # small enough that every held-out form is spelled with tokens seen in train
MIN_PAIR_FREQUENCY = 2

SPLITS = ("train", "valid", "test_combinations", "test_systematic", "test_longer")
AGREEMENT_SPLIT = "test_agreement"
HEADER = "en\tru\tstructure\tphenomena"
PHENOMENA = (
    "gender", "past_agreement", "numbers", "negation", "aspect", "questions", "cases",
    "adjective_agreement", "relative_clause", "two_clauses",
)
MIN_TRAIN_COUNT = 20  # every Russian form of test_combinations occurs this often in train

CASES = ("nom", "gen", "dat", "acc", "ins", "loc")


def key(*parts: str) -> str:
    """A stable pseudo-random sort key (the same on every machine and Python)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def cap(text: str) -> str:
    return text[0].upper() + text[1:]


def declension(forms: str) -> dict[str, str]:
    """'nom gen dat acc ins loc' -> {case: form}."""
    words = forms.split()
    if len(words) != 6:
        raise ValueError(f"six case forms expected: {forms!r}")
    return dict(zip(CASES, words, strict=True))


# =============================================================== the lexicon
# Every Russian form is written out. Cases: nom gen dat acc ins loc (loc = prepositional).


@dataclass(frozen=True)
class Person:
    """Someone who can be a subject: en phrase, gender 'm'/'f', Russian case forms."""

    en: str  # "the teacher", "Anna", "my brother"
    gender: str
    ru: dict  # case -> form (a phrase: "мой брат")
    lemma: str  # the lexical item, for splits ("teacher", "Anna", "brother")
    kind: str  # "profession", "name", "relative"


# Professions in both genders: en, masculine forms, feminine forms, masculine plural nom.
PROFESSIONS = [
    ("teacher", "учитель учителя учителю учителя учителем учителе",
     "учительница учительницы учительнице учительницу учительницей учительнице", "учителя"),
    ("researcher",
     "исследователь исследователя исследователю исследователя исследователем исследователе",
     "исследовательница исследовательницы исследовательнице исследовательницу "
     "исследовательницей исследовательнице", "исследователи"),
    ("writer", "писатель писателя писателю писателя писателем писателе",
     "писательница писательницы писательнице писательницу писательницей писательнице",
     "писатели"),
    ("lecturer",
     "преподаватель преподавателя преподавателю преподавателя преподавателем преподавателе",
     "преподавательница преподавательницы преподавательнице преподавательницу "
     "преподавательницей преподавательнице", "преподаватели"),
    ("visitor", "посетитель посетителя посетителю посетителя посетителем посетителе",
     "посетительница посетительницы посетительнице посетительницу посетительницей "
     "посетительнице", "посетители"),
    ("student", "студент студента студенту студента студентом студенте",
     "студентка студентки студентке студентку студенткой студентке", "студенты"),
    ("journalist", "журналист журналиста журналисту журналиста журналистом журналисте",
     "журналистка журналистки журналистке журналистку журналисткой журналистке",
     "журналисты"),
    ("pianist", "пианист пианиста пианисту пианиста пианистом пианисте",
     "пианистка пианистки пианистке пианистку пианисткой пианистке", "пианисты"),
    ("guitarist", "гитарист гитариста гитаристу гитариста гитаристом гитаристе",
     "гитаристка гитаристки гитаристке гитаристку гитаристкой гитаристке", "гитаристы"),
    ("tourist", "турист туриста туристу туриста туристом туристе",
     "туристка туристки туристке туристку туристкой туристке", "туристы"),
    ("athlete", "спортсмен спортсмена спортсмену спортсмена спортсменом спортсмене",
     "спортсменка спортсменки спортсменке спортсменку спортсменкой спортсменке",
     "спортсмены"),
    ("passenger", "пассажир пассажира пассажиру пассажира пассажиром пассажире",
     "пассажирка пассажирки пассажирке пассажирку пассажиркой пассажирке", "пассажиры"),
    ("artist", "художник художника художнику художника художником художнике",
     "художница художницы художнице художницу художницей художнице", "художники"),
    ("translator", "переводчик переводчика переводчику переводчика переводчиком переводчике",
     "переводчица переводчицы переводчице переводчицу переводчицей переводчице",
     "переводчики"),
    ("employee", "сотрудник сотрудника сотруднику сотрудника сотрудником сотруднике",
     "сотрудница сотрудницы сотруднице сотрудницу сотрудницей сотруднице", "сотрудники"),
    ("pupil", "ученик ученика ученику ученика учеником ученике",
     "ученица ученицы ученице ученицу ученицей ученице", "ученики"),
    ("singer", "певец певца певцу певца певцом певце",
     "певица певицы певице певицу певицей певице", "певцы"),
    ("actor", "актёр актёра актёру актёра актёром актёре",
     "актриса актрисы актрисе актрису актрисой актрисе", "актёры"),
]
# Feminines never shown in train, valid or test_combinations: test_systematic tests them.
# Their suffixes are regular and seen on other words (-тельница, -истка, -ирка ~ -ентка),
# and their masculines are in train.
SYSTEMATIC_FEMININES = ("visitor", "guitarist", "passenger")

NAMES = [  # en, gender, forms
    ("Anna", "f", "Анна Анны Анне Анну Анной Анне"),
    ("Olga", "f", "Ольга Ольги Ольге Ольгу Ольгой Ольге"),
    ("Maria", "f", "Мария Марии Марии Марию Марией Марии"),
    ("Nina", "f", "Нина Нины Нине Нину Ниной Нине"),
    ("Elena", "f", "Елена Елены Елене Елену Еленой Елене"),
    ("Ivan", "m", "Иван Ивана Ивану Ивана Иваном Иване"),
    ("Tom", "m", "Том Тома Тому Тома Томом Томе"),
    ("Igor", "m", "Игорь Игоря Игорю Игоря Игорем Игоре"),
    ("Boris", "m", "Борис Бориса Борису Бориса Борисом Борисе"),
    ("Pavel", "m", "Павел Павла Павлу Павла Павлом Павле"),
]

# Relatives: en, gender (of agreement), forms. мама/папа: the everyday words.
RELATIVES = [
    ("mother", "f", "мама мамы маме маму мамой маме"),
    ("father", "m", "папа папы папе папу папой папе"),
    ("brother", "m", "брат брата брату брата братом брате"),
    ("sister", "f", "сестра сестры сестре сестру сестрой сестре"),
    ("son", "m", "сын сына сыну сына сыном сыне"),
    ("daughter", "f", "дочь дочери дочери дочь дочерью дочери"),
    ("grandmother", "f", "бабушка бабушки бабушке бабушку бабушкой бабушке"),
    ("grandfather", "m", "дедушка дедушки дедушке дедушку дедушкой дедушке"),
    ("uncle", "m", "дядя дяди дяде дядю дядей дяде"),
    ("aunt", "f", "тётя тёти тёте тётю тётей тёте"),
]
MY = {  # мой / моя in every case (animate accusative for the masculine)
    "m": declension("мой моего моему моего моим моём"),
    "f": declension("моя моей моей мою моей моей"),
}


def people(kinds=("name", "relative", "profession"), genders=("m", "f")) -> list[Person]:
    out = []
    if "name" in kinds:
        for en, g, forms in NAMES:
            if g in genders:
                out.append(Person(en, g, declension(forms), en, "name"))
    if "relative" in kinds:
        for en, g, forms in RELATIVES:
            if g in genders:
                noun = declension(forms)
                ru = {c: f"{MY[g][c]} {noun[c]}" for c in CASES}
                out.append(Person(f"my {en}", g, ru, en, "relative"))
    if "profession" in kinds:
        for en, m_forms, f_forms, _ in PROFESSIONS:
            for g, forms in (("m", m_forms), ("f", f_forms)):
                if g in genders:
                    out.append(Person(f"the {en}", g, declension(forms), en, "profession"))
    return out


def relative_forms(en: str) -> tuple[str, dict]:
    for name, g, forms in RELATIVES:
        if name == en:
            return g, declension(forms)
    raise KeyError(en)


PRONOUN = {"m": "he", "f": "she", "pl": "they"}
POSSESSIVE = {"m": "his", "f": "her", "pl": "their"}
OBJECT_PRONOUN = {"m": "him", "f": "her"}
RU_PRONOUN = {"m": "он", "f": "она", "pl": "они"}


@dataclass(frozen=True)
class Thing:
    """An inanimate noun: en singular/plural, gender m/f/n, singular and plural forms."""

    en: str
    en_pl: str
    gender: str
    sg: dict
    pl: dict


def thing(en, en_pl, gender, sg, pl) -> Thing:
    return Thing(en, en_pl, gender, declension(sg), declension(pl))


# Countable things that can lie on a table, be bought, lost, given.
THINGS = [
    thing("book", "books", "f", "книга книги книге книгу книгой книге",
          "книги книг книгам книги книгами книгах"),
    thing("ticket", "tickets", "m", "билет билета билету билет билетом билете",
          "билеты билетов билетам билеты билетами билетах"),
    thing("bag", "bags", "f", "сумка сумки сумке сумку сумкой сумке",
          "сумки сумок сумкам сумки сумками сумках"),
    thing("phone", "phones", "m", "телефон телефона телефону телефон телефоном телефоне",
          "телефоны телефонов телефонам телефоны телефонами телефонах"),
    thing("letter", "letters", "n", "письмо письма письму письмо письмом письме",
          "письма писем письмам письма письмами письмах"),
    thing("key", "keys", "m", "ключ ключа ключу ключ ключом ключе",
          "ключи ключей ключам ключи ключами ключах"),
    thing("umbrella", "umbrellas", "m", "зонт зонта зонту зонт зонтом зонте",
          "зонты зонтов зонтам зонты зонтами зонтах"),
    thing("newspaper", "newspapers", "f", "газета газеты газете газету газетой газете",
          "газеты газет газетам газеты газетами газетах"),
    thing("notebook", "notebooks", "f", "тетрадь тетради тетради тетрадь тетрадью тетради",
          "тетради тетрадей тетрадям тетради тетрадями тетрадях"),
    thing("pen", "pens", "f", "ручка ручки ручке ручку ручкой ручке",
          "ручки ручек ручкам ручки ручками ручках"),
    thing("cup", "cups", "f", "чашка чашки чашке чашку чашкой чашке",
          "чашки чашек чашкам чашки чашками чашках"),
    thing("gift", "gifts", "m", "подарок подарка подарку подарок подарком подарке",
          "подарки подарков подаркам подарки подарками подарках"),
    thing("pencil", "pencils", "m", "карандаш карандаша карандашу карандаш карандашом карандаше",
          "карандаши карандашей карандашам карандаши карандашами карандашах"),
    thing("dictionary", "dictionaries", "m", "словарь словаря словарю словарь словарём словаре",
          "словари словарей словарям словари словарями словарях"),
    thing("apple", "apples", "n", "яблоко яблока яблоку яблоко яблоком яблоке",
          "яблоки яблок яблокам яблоки яблоками яблоках"),
    thing("magazine", "magazines", "m", "журнал журнала журналу журнал журналом журнале",
          "журналы журналов журналам журналы журналами журналах"),
    thing("suitcase", "suitcases", "m", "чемодан чемодана чемодану чемодан чемоданом чемодане",
          "чемоданы чемоданов чемоданам чемоданы чемоданами чемоданах"),
    thing("shirt", "shirts", "f", "рубашка рубашки рубашке рубашку рубашкой рубашке",
          "рубашки рубашек рубашкам рубашки рубашками рубашках"),
    thing("dress", "dresses", "n", "платье платья платью платье платьем платье",
          "платья платьев платьям платья платьями платьях"),
    thing("computer", "computers", "m",
          "компьютер компьютера компьютеру компьютер компьютером компьютере",
          "компьютеры компьютеров компьютерам компьютеры компьютерами компьютерах"),
]
THING = {t.en: t for t in THINGS}
BUYABLE = [t.en for t in THINGS if t.en not in ("letter", "key")]
LOSABLE = ["book", "ticket", "bag", "phone", "key", "umbrella", "notebook", "pen", "pencil",
           "dictionary", "suitcase"]
# Case forms never shown in train, valid or test_combinations (test_systematic): the noun
# is seen in other cases, and the ending on other nouns of its kind (-ом/-ём, -е).
SYSTEMATIC_CASE_FORMS = ("словарём", "зонтом", "компьютере")
SMALL_THINGS = ["book", "ticket", "phone", "letter", "key", "newspaper", "notebook", "pen",
                "pencil", "dictionary", "magazine"]  # lie on a table, fit in a bag
CARRIED = ["bag", "umbrella", "suitcase", "book", "dictionary", "computer"]
# Things that go with every adjective (new, old, big, small, red, expensive, cheap, black)
# without sounding odd ("a black newspaper", "a red gift" would).
ADJ_THINGS = ["book", "bag", "phone", "umbrella", "notebook", "pen", "cup", "pencil",
              "dictionary", "suitcase", "shirt", "dress", "computer"]
ADJ_THINGS_ON_TABLE = ["book", "bag", "phone", "umbrella", "notebook", "pen", "pencil",
                       "dictionary", "shirt"]

# Adjectives: en, then masculine, feminine, neuter, plural, each in the six cases.
# The accusative given is the inanimate one (these only go with things and places).
ADJECTIVES = {
    "new": ("новый нового новому новый новым новом", "новая новой новой новую новой новой",
            "новое нового новому новое новым новом", "новые новых новым новые новыми новых"),
    "old": ("старый старого старому старый старым старом",
            "старая старой старой старую старой старой",
            "старое старого старому старое старым старом",
            "старые старых старым старые старыми старых"),
    "big": ("большой большого большому большой большим большом",
            "большая большой большой большую большой большой",
            "большое большого большому большое большим большом",
            "большие больших большим большие большими больших"),
    "small": ("маленький маленького маленькому маленький маленьким маленьком",
              "маленькая маленькой маленькой маленькую маленькой маленькой",
              "маленькое маленького маленькому маленькое маленьким маленьком",
              "маленькие маленьких маленьким маленькие маленькими маленьких"),
    "red": ("красный красного красному красный красным красном",
            "красная красной красной красную красной красной",
            "красное красного красному красное красным красном",
            "красные красных красным красные красными красных"),
    "expensive": ("дорогой дорогого дорогому дорогой дорогим дорогом",
                  "дорогая дорогой дорогой дорогую дорогой дорогой",
                  "дорогое дорогого дорогому дорогое дорогим дорогом",
                  "дорогие дорогих дорогим дорогие дорогими дорогих"),
    "cheap": ("дешёвый дешёвого дешёвому дешёвый дешёвым дешёвом",
              "дешёвая дешёвой дешёвой дешёвую дешёвой дешёвой",
              "дешёвое дешёвого дешёвому дешёвое дешёвым дешёвом",
              "дешёвые дешёвых дешёвым дешёвые дешёвыми дешёвых"),
    "black": ("чёрный чёрного чёрному чёрный чёрным чёрном",
              "чёрная чёрной чёрной чёрную чёрной чёрной",
              "чёрное чёрного чёрному чёрное чёрным чёрном",
              "чёрные чёрных чёрным чёрные чёрными чёрных"),
}
ADJ = {en: {g: declension(f) for g, f in zip(("m", "f", "n", "pl"), forms, strict=True)}
       for en, forms in ADJECTIVES.items()}


def an(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def with_(word: str) -> str:
    """с, or со before с/з/ш/ж + consonant (со старым, but с сестрой: с + vowel after с)."""
    vowels = "аеёиоуыэюя"
    if word[0] in "сзшж" and word[1] not in vowels:
        return "со"
    return "с"


@dataclass(frozen=True)
class Place:
    en: str
    prep: str  # "в" or "на"
    gen_prep: str  # "из" or "с"
    gender: str
    forms: dict  # nom gen dat acc ins loc


PLACES = [
    Place("school", "в", "из", "f", declension("школа школы школе школу школой школе")),
    Place("bank", "в", "из", "m", declension("банк банка банку банк банком банке")),
    Place("hospital", "в", "из", "f",
          declension("больница больницы больнице больницу больницей больнице")),
    Place("store", "в", "из", "m",
          declension("магазин магазина магазину магазин магазином магазине")),
    Place("library", "в", "из", "f",
          declension("библиотека библиотеки библиотеке библиотеку библиотекой библиотеке")),
    Place("office", "в", "из", "m", declension("офис офиса офису офис офисом офисе")),
    Place("post office", "на", "с", "f", declension("почта почты почте почту почтой почте")),
    Place("station", "на", "с", "m", declension("вокзал вокзала вокзалу вокзал вокзалом вокзале")),
    Place("factory", "на", "с", "m", declension("завод завода заводу завод заводом заводе")),
    Place("market", "на", "с", "m", declension("рынок рынка рынку рынок рынком рынке")),
    Place("museum", "в", "из", "m", declension("музей музея музею музей музеем музее")),
    Place("theater", "в", "из", "m", declension("театр театра театру театр театром театре")),
    Place("park", "в", "из", "m", declension("парк парка парку парк парком парке")),
    Place("university", "в", "из", "m",
          declension("университет университета университету университет университетом "
                     "университете")),
]
PLACE = {p.en: p for p in PLACES}

# Food, uncountable: en, Russian nom, gen, acc.
FOOD = [
    ("bread", "хлеб", "хлеба", "хлеб"),
    ("milk", "молоко", "молока", "молоко"),
    ("cheese", "сыр", "сыра", "сыр"),
    ("butter", "масло", "масла", "масло"),
    ("fish", "рыба", "рыбы", "рыбу"),
    ("meat", "мясо", "мяса", "мясо"),
    ("sugar", "сахар", "сахара", "сахар"),
    ("juice", "сок", "сока", "сок"),
    ("rice", "рис", "риса", "рис"),
    ("tea", "чай", "чая", "чай"),
]

# The states of "X said she was ...": en, masculine, feminine, plural.
STATES = [
    ("exhausted", "вымотался", "вымоталась", "вымотались"),
    ("tired", "устал", "устала", "устали"),
    ("late", "опоздал", "опоздала", "опоздали"),
    ("lost", "заблудился", "заблудилась", "заблудились"),
    ("ill", "заболел", "заболела", "заболели"),
    ("busy", "занят", "занята", "заняты"),
    ("ready", "готов", "готова", "готовы"),
    ("glad", "рад", "рада", "рады"),
    ("right", "прав", "права", "правы"),
    ("wrong", "ошибся", "ошиблась", "ошиблись"),
    ("cold", "замёрз", "замёрзла", "замёрзли"),
    ("hungry", "проголодался", "проголодалась", "проголодались"),
]
# "X thinks she is ...": present-tense short adjectives, en, masculine, feminine
THINK_STATES = [("right", "прав", "права"), ("wrong", "не прав", "не права"),
                ("ready", "готов", "готова")]


@dataclass(frozen=True)
class Verb:
    """An aspect pair with its objects.

    en: past, 3sg, base; ru: perfective past m/f/pl, imperfective past m/f/pl,
    imperfective present 3sg, perfective future 3sg; objects: (en, ru) pairs.
    """

    en_past: str
    en_3sg: str
    en_base: str
    perf: tuple
    impf: tuple
    pres: str
    fut: str
    objects: tuple


VERBS = [
    Verb("wrote", "writes", "write", ("написал", "написала", "написали"),
         ("писал", "писала", "писали"), "пишет", "напишет",
         (("a letter", "письмо"), ("a report", "отчёт"), ("a poem", "стихотворение"))),
    Verb("read", "reads", "read", ("прочитал", "прочитала", "прочитали"),
         ("читал", "читала", "читали"), "читает", "прочитает",
         (("a book", "книгу"), ("the newspaper", "газету"), ("a magazine", "журнал"))),
    Verb("bought", "buys", "buy", ("купил", "купила", "купили"),
         ("покупал", "покупала", "покупали"), "покупает", "купит",
         (("bread", "хлеб"), ("milk", "молоко"), ("flowers", "цветы"))),
    Verb("cooked", "cooks", "cook", ("приготовил", "приготовила", "приготовили"),
         ("готовил", "готовила", "готовили"), "готовит", "приготовит",
         (("dinner", "ужин"), ("breakfast", "завтрак"), ("soup", "суп"))),
    Verb("drank", "drinks", "drink", ("выпил", "выпила", "выпили"), ("пил", "пила", "пили"),
         "пьёт", "выпьет",
         (("a cup of coffee", "чашку кофе"), ("a glass of milk", "стакан молока"),
          ("a cup of tea", "чашку чая"))),
    Verb("ate", "eats", "eat", ("съел", "съела", "съели"), ("ел", "ела", "ели"), "ест", "съест",
         (("an apple", "яблоко"), ("a sandwich", "бутерброд"), ("an orange", "апельсин"))),
    Verb("washed", "washes", "wash", ("помыл", "помыла", "помыли"), ("мыл", "мыла", "мыли"),
         "моет", "помоет",
         (("the dishes", "посуду"), ("the car", "машину"), ("the floor", "пол"))),
    Verb("watched", "watches", "watch", ("посмотрел", "посмотрела", "посмотрели"),
         ("смотрел", "смотрела", "смотрели"), "смотрит", "посмотрит",
         (("a movie", "фильм"), ("the news", "новости"))),
    Verb("cleaned", "cleans", "clean", ("убрал", "убрала", "убрали"),
         ("убирал", "убирала", "убирали"), "убирает", "уберёт",
         (("the room", "комнату"), ("the kitchen", "кухню"), ("the apartment", "квартиру"))),
    Verb("opened", "opens", "open", ("открыл", "открыла", "открыли"),
         ("открывал", "открывала", "открывали"), "открывает", "откроет",
         (("the window", "окно"), ("the door", "дверь"), ("the store", "магазин"))),
]
# The -ing forms used with "was ...ing" (things one does at home).
EN_ING = {"write": "writing", "read": "reading", "cook": "cooking", "eat": "eating",
          "wash": "washing", "watch": "watching", "clean": "cleaning"}
# Verbs with a dative object (a relative): en past/3sg/base, perf, impf, pres, fut.
DATIVE_VERBS = [
    ("called", "calls", "call", ("позвонил", "позвонила", "позвонили"),
     ("звонил", "звонила", "звонили"), "звонит", "позвонит"),
    ("helped", "helps", "help", ("помог", "помогла", "помогли"),
     ("помогал", "помогала", "помогали"), "помогает", "поможет"),
]
# Verbs with an accusative object, past only: en, ru m/f/pl.
LOSE_VERBS = [
    ("lost", ("потерял", "потеряла", "потеряли")),
    ("forgot", ("забыл", "забыла", "забыли")),
    ("found", ("нашёл", "нашла", "нашли")),
    ("took", ("взял", "взяла", "взяли")),
]
SVOY = {  # свой, agreeing with the thing, accusative (inanimate)
    "m": "свой", "f": "свою", "n": "своё", "pl": "свои",
}
GN = {"m": 0, "f": 1, "pl": 2}

# ---------------------------------------------------------------- numbers
EN_NUMBERS = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
              "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
              "seventeen", "eighteen", "nineteen", "twenty"]
RU_UNITS = {1: {"m": "один", "f": "одна", "n": "одно"}, 2: {"m": "два", "f": "две", "n": "два"},
            3: "три", 4: "четыре", 5: "пять", 6: "шесть", 7: "семь", 8: "восемь",
            9: "девять"}
RU_TEENS = {10: "десять", 11: "одиннадцать", 12: "двенадцать", 13: "тринадцать",
            14: "четырнадцать", 15: "пятнадцать", 16: "шестнадцать", 17: "семнадцать",
            18: "восемнадцать", 19: "девятнадцать", 20: "двадцать"}
NUMBERS = list(range(1, 26))


def en_number(n: int) -> str:
    if n <= 20:
        return EN_NUMBERS[n]
    return f"twenty-{EN_NUMBERS[n - 20]}"


def ru_number(n: int, gender: str, case: str = "nom") -> str:
    """The numeral, nominative or (inanimate) accusative: одна/одну, две, пять."""
    def unit(u):
        form = RU_UNITS[u]
        if isinstance(form, dict):
            form = form[gender]
        if case == "acc" and form == "одна":
            form = "одну"
        return form
    if n < 10:
        return unit(n)
    if n <= 20:
        return RU_TEENS[n]
    return f"двадцать {unit(n - 20)}" if n > 20 else RU_TEENS[20]


def count_form(n: int) -> str:
    """Which noun form follows n: 'one' (sg), 'few' (gen sg), 'many' (gen pl)."""
    if n % 10 == 1 and n % 100 != 11:
        return "one"
    if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14):
        return "few"
    return "many"


# The wrong noun form after a number, for test_agreement: пять книги, две книг, одна книги.
WRONG_COUNT = {"one": "few", "few": "many", "many": "few"}


def counted(n: int, t: Thing, case: str = "nom", wrong: bool = False) -> str:
    """'две книги', 'пять книг', 'двадцать одну книгу' (case nom or inanimate acc)."""
    form = count_form(n)
    form = WRONG_COUNT[form] if wrong else form
    noun = {"one": t.sg[case], "few": t.sg["gen"], "many": t.pl["gen"]}[form]
    return f"{ru_number(n, t.gender, case)} {noun}"


# Units of time and age: (en sg, en pl, gender, one, few, many) - the accusative of one.
MINUTE = ("minute", "minutes", "f", "минуту", "минуты", "минут")
HOUR = ("hour", "hours", "m", "час", "часа", "часов")
YEAR = ("year", "years", "m", "год", "года", "лет")


def counted_unit(n: int, unit, case="acc", wrong: bool = False) -> str:
    _, _, g, one, few, many = unit
    form = count_form(n)
    form = WRONG_COUNT[form] if wrong else form
    noun = {"one": one, "few": few, "many": many}[form]
    return f"{ru_number(n, g, case)} {noun}"


def en_counted(n: int, sg: str, pl: str) -> str:
    return f"{en_number(n)} {sg if n == 1 else pl}"


# =============================================================== templates


@dataclass
class Pair:
    en: str
    ru: str
    structure: str
    phenomena: tuple
    combo: tuple  # the template's key words, for held-out combinations
    forms: tuple = ()  # lexical features for test_systematic (e.g. "fem:visitor")
    broken: tuple = ()  # (ru_broken, phenomenon) alternatives for test_agreement


@dataclass
class Template:
    name: str
    phenomena: tuple
    clauses: int
    generate: object  # () -> iterable of Pair
    cap: int = 700  # at most this many pairs of this structure (a fixed subsample)
    longer: bool = False  # a test_longer structure: never in train


TEMPLATES: list[Template] = []


def template(name, phenomena, clauses=1, cap_=700, longer=False):
    for p in phenomena:
        if p not in PHENOMENA:
            raise ValueError(f"unknown phenomenon {p}")

    def register(fn):
        TEMPLATES.append(Template(name, tuple(phenomena), clauses, fn, cap_, longer))
        return fn
    return register


def systematic_forms() -> frozenset:
    """Every Russian form that only test_systematic may contain."""
    forms = set(SYSTEMATIC_CASE_FORMS)
    for en, _, f_forms, _ in PROFESSIONS:
        if en in SYSTEMATIC_FEMININES:
            forms |= set(f_forms.split())
    return frozenset(forms)


def sysf(person: Person) -> tuple:
    """The systematic feature a person carries: a held-out feminine profession."""
    if person.kind == "profession" and person.gender == "f":
        return (f"fem:{person.lemma}",)
    return ()


def odd_owner(person: Person, t: Thing) -> bool:
    """A man who has (or has no) dresses: grammatical, but not what anyone says."""
    return person.gender == "m" and t.en == "dress"


def flip(g: str) -> str:
    return {"m": "f", "f": "m"}[g]


WRONG_GENDER = {"m": "f", "f": "m", "n": "f", "pl": "m"}  # for broken adjectives


def broken(ru: str, wrong: str, phenomenon: str) -> tuple:
    """The test_agreement alternative: () when breaking changed nothing."""
    return () if wrong == ru else ((wrong, phenomenon),)


# ---- gender decided by a later pronoun

@template("said_state", ("gender", "past_agreement"), clauses=2, cap_=900)
def _said_state():
    for p in people(("profession",)):
        for st in STATES:
            en = f"{cap(p.en)} said {PRONOUN[p.gender]} was {st[0]}."
            said = {"m": "сказал", "f": "сказала"}
            ru = f"{cap(p.ru['nom'])} {said[p.gender]}, что {st[1 + GN[p.gender]]}."
            broken = (f"{cap(p.ru['nom'])} {said[p.gender]}, что {st[1 + GN[flip(p.gender)]]}.",
                      "past_agreement")
            yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p), (broken,))


@template("said_state_name", ("gender", "past_agreement"), clauses=2, cap_=500)
def _said_state_name():
    for p in people(("name", "relative")):
        for st in STATES:
            en = f"{cap(p.en)} said {PRONOUN[p.gender]} was {st[0]}."
            said = {"m": "сказал", "f": "сказала"}[p.gender]
            ru = f"{cap(p.ru['nom'])} {said}, что {st[1 + GN[p.gender]]}."
            wrong = f"{cap(p.ru['nom'])} {said}, что {st[1 + GN[flip(p.gender)]]}."
            yield Pair(en, ru, "", (), (p.lemma, st[0]), (), broken(ru, wrong, "past_agreement"))


@template("said_state_plural", ("past_agreement",), clauses=2, cap_=400)
def _said_state_plural():
    for en_p, _, _, pl in PROFESSIONS:
        for st in STATES:
            en = f"The {en_p}s said they were {st[0]}."
            ru = f"{cap(pl)} сказали, что {st[3]}."
            wrong = f"{cap(pl)} сказали, что {st[1]}."
            yield Pair(en, ru, "", (), (en_p, st[0]), (), broken(ru, wrong, "past_agreement"))


@template("thinks_state", ("gender",), clauses=2, cap_=400)
def _thinks_state():
    for p in people(("profession",)):
        for st in THINK_STATES:
            en = f"{cap(p.en)} thinks {PRONOUN[p.gender]} is {st[0]}."
            ru = f"{cap(p.ru['nom'])} думает, что {RU_PRONOUN[p.gender]} {st[1 + GN[p.gender]]}."
            broken = (f"{cap(p.ru['nom'])} думает, что {RU_PRONOUN[p.gender]} "
                      f"{st[1 + GN[flip(p.gender)]]}.", "gender")
            yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p), (broken,))


@template("lost_own_thing", ("gender", "past_agreement", "adjective_agreement"), cap_=800)
def _lost_own_thing():
    for p in people(("profession", "name")):
        for en_v, ru_v in LOSE_VERBS:
            for t in map(THING.get, LOSABLE):
                en = f"{cap(p.en)} {en_v} {POSSESSIVE[p.gender]} {t.en}."
                ru = f"{cap(p.ru['nom'])} {ru_v[GN[p.gender]]} {SVOY[t.gender]} {t.sg['acc']}."
                broken = (f"{cap(p.ru['nom'])} {ru_v[GN[flip(p.gender)]]} {SVOY[t.gender]} "
                          f"{t.sg['acc']}.", "past_agreement")
                yield Pair(en, ru, "", (), (p.lemma, t.en), sysf(p), (broken,))


@template("called_relative", ("gender", "past_agreement", "cases"), cap_=700)
def _called_relative():
    for p in people(("profession", "name")):
        for en_v, _, _, perf, _, _, _ in DATIVE_VERBS:
            for rel, _, forms in RELATIVES:
                rf = declension(forms)
                en = f"{cap(p.en)} {en_v} {POSSESSIVE[p.gender]} {rel}."
                ru = f"{cap(p.ru['nom'])} {perf[GN[p.gender]]} {rf['dat']}."
                broken = (f"{cap(p.ru['nom'])} {perf[GN[flip(p.gender)]]} {rf['dat']}.",
                          "past_agreement")
                yield Pair(en, ru, "", (), (p.lemma, rel), sysf(p), (broken,))


@template("met_relative_at_place", ("gender", "past_agreement", "cases"), cap_=700)
def _met_relative():
    for p in people(("profession", "name")):
        for rel, _, forms in RELATIVES:
            rf = declension(forms)
            for pl in PLACES:
                met = {"m": "встретил", "f": "встретила"}[p.gender]
                en = f"{cap(p.en)} met {POSSESSIVE[p.gender]} {rel} at the {pl.en}."
                ru = f"{cap(p.ru['nom'])} {met} {rf['acc']} {pl.prep} {pl.forms['loc']}."
                yield Pair(en, ru, "", (), (p.lemma, rel), sysf(p))


@template("looking_for_someone_or_something", ("cases", "gender"), cap_=800)
def _looking_for():
    """Animate vs inanimate accusative: ищет брата / ищет свой телефон, учителя / чемодан.

    A profession as the object has no pronoun to decide its gender, so the template uses
    the masculine, Russian's generic form ("the teacher" -> учителя).
    """
    for p in people(("name", "relative")):
        objects = [(f"{POSSESSIVE[p.gender]} {rel}", relative_forms(rel)[1]["acc"], rel)
                   for rel, _, _ in RELATIVES]
        objects += [(f"{POSSESSIVE[p.gender]} {t.en}", f"{SVOY[t.gender]} {t.sg['acc']}", t.en)
                    for t in map(THING.get, LOSABLE)]
        objects += [(x.en, x.ru["acc"], x.lemma) for x in people(("profession",), ("m",))
                    if x.lemma not in SYSTEMATIC_FEMININES]
        for en_o, ru_o, lemma in objects:
            en = f"{cap(p.en)} is looking for {en_o}."
            ru = f"{cap(p.ru['nom'])} ищет {ru_o}."
            yield Pair(en, ru, "", (), (p.lemma, lemma))


# ---- cases with places

GO = {"m": "пошёл", "f": "пошла"}
CAME_BACK = {"m": "вернулся", "f": "вернулась"}


@template("went_to_place", ("cases", "past_agreement"))
def _went_to_place():
    for p in people(("name", "relative")):
        for pl in PLACES:
            en = f"{cap(p.en)} went to the {pl.en}."
            ru = f"{cap(p.ru['nom'])} {GO[p.gender]} {pl.prep} {pl.forms['acc']}."
            wrong = f"{cap(p.ru['nom'])} {GO[p.gender]} {pl.prep} {pl.forms['loc']}."
            yield Pair(en, ru, "", (), (p.lemma, pl.en), (), broken(ru, wrong, "cases"))


@template("works_at_place", ("cases",))
def _works_at_place():
    for p in people(("name", "relative")):
        for pl in PLACES:
            en = f"{cap(p.en)} works at the {pl.en}."
            ru = f"{cap(p.ru['nom'])} работает {pl.prep} {pl.forms['loc']}."
            yield Pair(en, ru, "", (), (p.lemma, pl.en))


@template("came_back_from_place", ("cases", "past_agreement"))
def _came_back():
    for p in people(("name", "relative")):
        for pl in PLACES:
            en = f"{cap(p.en)} came back from the {pl.en}."
            ru = f"{cap(p.ru['nom'])} {CAME_BACK[p.gender]} {pl.gen_prep} {pl.forms['gen']}."
            yield Pair(en, ru, "", (), (p.lemma, pl.en))


@template("went_with_relative", ("cases", "past_agreement"))
def _went_with():
    for p in people(("name",)):
        for rel, _, forms in RELATIVES:
            rf = declension(forms)
            for pl in PLACES:
                en = f"{p.en} went to the {pl.en} with {POSSESSIVE[p.gender]} {rel}."
                ru = (f"{p.ru['nom']} {GO[p.gender]} {pl.prep} {pl.forms['acc']} "
                      f"{with_(rf['ins'])} {rf['ins']}.")
                yield Pair(en, ru, "", (), (p.lemma, rel, pl.en))


@template("gave_thing_to_relative", ("cases", "past_agreement"))
def _gave():
    gave = {"m": "дал", "f": "дала"}
    for p in people(("name",)):
        for t in (t for t in THINGS if t.en != "dress"):  # a dress to a grandfather: odd
            for rel, _, forms in RELATIVES:
                rf = declension(forms)
                en = f"{p.en} gave the {t.en} to {POSSESSIVE[p.gender]} {rel}."
                ru = f"{p.ru['nom']} {gave[p.gender]} {t.sg['acc']} {rf['dat']}."
                yield Pair(en, ru, "", (), (t.en, rel))


# ---- aspect

def _objects():
    for v in VERBS:
        for obj in v.objects:
            yield v, obj


@template("yesterday_perfective", ("aspect", "past_agreement"))
def _yesterday():
    for p in people(("name", "relative")):
        for v, (en_o, ru_o) in _objects():
            en = f"Yesterday {p.en} {v.en_past} {en_o}."
            ru = f"Вчера {p.ru['nom']} {v.perf[GN[p.gender]]} {ru_o}."
            # no broken twin: "Вчера Анна писала письмо" is Russian too (general-factual)
            yield Pair(en, ru, "", (), (v.en_base, en_o))


@template("every_day_imperfective_past", ("aspect", "past_agreement"))
def _every_day_past():
    for p in people(("name", "relative")):
        for v, (en_o, ru_o) in _objects():
            en = f"Every day {p.en} {v.en_past} {en_o}."
            ru = f"Каждый день {p.ru['nom']} {v.impf[GN[p.gender]]} {ru_o}."
            broken = (f"Каждый день {p.ru['nom']} {v.perf[GN[p.gender]]} {ru_o}.", "aspect")
            yield Pair(en, ru, "", (), (v.en_base, en_o), (), (broken,))


@template("every_day_present", ("aspect",))
def _every_day_present():
    for p in people(("name", "relative")):
        for v, (en_o, ru_o) in _objects():
            en = f"{cap(p.en)} {v.en_3sg} {en_o} every day."
            ru = f"{cap(p.ru['nom'])} каждый день {v.pres} {ru_o}."
            yield Pair(en, ru, "", (), (v.en_base, en_o))


@template("tomorrow_perfective_future", ("aspect",))
def _tomorrow():
    for p in people(("name", "relative")):
        for v, (en_o, ru_o) in _objects():
            en = f"Tomorrow {p.en} will {v.en_base} {en_o}."
            ru = f"Завтра {p.ru['nom']} {v.fut} {ru_o}."
            yield Pair(en, ru, "", (), (v.en_base, en_o))


# ---- numbers

@template("has_number_of_things", ("numbers", "cases"), cap_=800)
def _has_number():
    for p in people(("name",)):
        for t in THINGS:
            if odd_owner(p, t):
                continue
            for n in NUMBERS:
                en = f"{p.en} has {en_counted(n, t.en, t.en_pl)}."
                ru = f"У {p.ru['gen']} {counted(n, t)}."
                wrong = f"У {p.ru['gen']} {counted(n, t, wrong=True)}."
                yield Pair(en, ru, "", (), (t.en, str(n)), (), broken(ru, wrong, "numbers"))


@template("bought_number_of_things", ("numbers", "past_agreement"), cap_=800)
def _bought_number():
    bought = {"m": "купил", "f": "купила"}
    for p in people(("name",)):
        for t in map(THING.get, BUYABLE):
            for n in NUMBERS:
                en = f"{p.en} bought {en_counted(n, t.en, t.en_pl)}."
                ru = f"{p.ru['nom']} {bought[p.gender]} {counted(n, t, 'acc')}."
                wrong = f"{p.ru['nom']} {bought[p.gender]} {counted(n, t, 'acc', wrong=True)}."
                yield Pair(en, ru, "", (), (t.en, str(n)), (), broken(ru, wrong, "numbers"))


@template("number_on_the_table", ("numbers",), cap_=500)
def _on_table():
    for t in THINGS:
        if t.en not in SMALL_THINGS + ["apple", "cup"]:
            continue
        for n in NUMBERS:
            verb = "is" if n == 1 else "are"
            en = f"There {verb} {en_counted(n, t.en, t.en_pl)} on the table."
            ru = f"На столе {counted(n, t)}."
            wrong = f"На столе {counted(n, t, wrong=True)}."
            yield Pair(en, ru, "", (), (t.en, str(n)), (), broken(ru, wrong, "numbers"))


@template("waited_minutes", ("numbers", "past_agreement"), cap_=400)
def _waited():
    waited = {"m": "ждал", "f": "ждала"}
    for p in people(("name", "relative")):
        for n in NUMBERS:
            for unit in (MINUTE, HOUR):
                if unit is HOUR and n > 12:  # waiting a day or more: not what anyone says
                    continue
                en = f"{cap(p.en)} waited {en_counted(n, unit[0], unit[1])}."
                ru = f"{cap(p.ru['nom'])} {waited[p.gender]} {counted_unit(n, unit)}."
                wrong = (f"{cap(p.ru['nom'])} {waited[p.gender]} "
                         f"{counted_unit(n, unit, wrong=True)}.")
                yield Pair(en, ru, "", (), (unit[0], str(n)), (), broken(ru, wrong, "numbers"))


@template("relative_age", ("numbers", "cases"), cap_=500)
def _age():
    for p in people(("name",)):
        for rel in ("brother", "sister", "son", "daughter"):
            _, rf = relative_forms(rel)
            for n in NUMBERS:
                en = f"{p.en}'s {rel} is {en_counted(n, 'year', 'years')} old."
                ru = f"{cap(rf['dat'])} {p.ru['gen']} {counted_unit(n, YEAR, 'nom')}."
                wrong = f"{cap(rf['dat'])} {p.ru['gen']} {counted_unit(n, YEAR, 'nom', True)}."
                yield Pair(en, ru, "", (), (rel, str(n)), (), broken(ru, wrong, "numbers"))


# ---- negation with the genitive

@template("has_no_thing", ("negation", "cases"))
def _has_no():
    for p in people(("name", "relative")):
        for t in THINGS:
            if odd_owner(p, t):
                continue
            en = f"{cap(p.en)} has no {t.en}."
            ru = f"У {p.ru['gen']} нет {t.sg['gen']}."
            wrong = f"У {p.ru['gen']} нет {t.sg['nom']}."
            yield Pair(en, ru, "", (), (p.lemma, t.en), (), broken(ru, wrong, "negation"))


@template("no_food_at_place", ("negation", "cases"))
def _no_food():
    for f in FOOD:
        for pl in PLACES:
            if pl.en not in ("store", "market"):
                continue
            for tense in ("is", "was"):
                en = f"There {tense} no {f[0]} at the {pl.en}."
                verb = "нет" if tense == "is" else "не было"
                ru = f"{cap(pl.prep)} {pl.forms['loc']} {verb} {f[2]}."
                wrong = f"{cap(pl.prep)} {pl.forms['loc']} {verb} {f[1]}."
                yield Pair(en, ru, "", (), (f[0], tense), (), broken(ru, wrong, "negation"))


@template("no_food_in_fridge", ("negation", "cases"))
def _no_food_fridge():
    for f in FOOD:
        if f[0] in ("tea", "rice", "sugar"):
            continue
        for tense in ("is", "was"):
            en = f"There {tense} no {f[0]} in the fridge."
            verb = "нет" if tense == "is" else "не было"
            ru = f"В холодильнике {verb} {f[2]}."
            yield Pair(en, ru, "", (), (f[0], tense))


# Habits: en verb + object, Russian 3sg present + object (the accusative).
HABITS = [
    ("drink coffee", "пьёт кофе"), ("drink milk", "пьёт молоко"), ("drink tea", "пьёт чай"),
    ("eat meat", "ест мясо"), ("eat fish", "ест рыбу"), ("eat cheese", "ест сыр"),
    ("read newspapers", "читает газеты"), ("read magazines", "читает журналы"),
    ("watch the news", "смотрит новости"), ("watch movies", "смотрит фильмы"),
    ("write letters", "пишет письма"), ("wash the dishes", "моет посуду"),
    ("cook dinner", "готовит ужин"), ("buy bread", "покупает хлеб"),
]


@template("does_not_habit", ("negation",))
def _does_not():
    for p in people(("name", "relative")):
        for en_h, ru_h in HABITS:
            en = f"{cap(p.en)} does not {en_h}."
            ru = f"{cap(p.ru['nom'])} не {ru_h}."
            yield Pair(en, ru, "", (), (p.lemma, en_h))


# ---- questions

@template("question_yesterday_yes_no", ("questions", "aspect", "past_agreement"))
def _q_yes_no():
    for p in people(("name",)):
        for v, (en_o, ru_o) in _objects():
            en = f"Did {p.en} {v.en_base} {en_o} yesterday?"
            ru = f"{p.ru['nom']} вчера {v.perf[GN[p.gender]]} {ru_o}?"
            yield Pair(en, ru, "", (), (v.en_base, en_o))


@template("question_where_works", ("questions",), cap_=300)
def _q_where_works():
    for p in people(("name", "relative")) + people(("profession",), genders=("m",)):
        en = f"Where does {p.en} work?"
        ru = f"Где работает {p.ru['nom']}?"
        yield Pair(en, ru, "", (), (p.lemma,))


@template("question_where_bought", ("questions", "past_agreement", "cases"))
def _q_where_bought():
    bought = {"m": "купил", "f": "купила"}
    for p in people(("name", "relative")):
        for t in map(THING.get, BUYABLE):
            en = f"Where did {p.en} buy the {t.en}?"
            ru = f"Где {p.ru['nom']} {bought[p.gender]} {t.sg['acc']}?"
            yield Pair(en, ru, "", (), (p.lemma, t.en))


@template("question_who_called", ("questions", "cases"))
def _q_who_called():
    for p in people(("name", "relative")):
        for en_v, _, _, perf, _, _, _ in DATIVE_VERBS:
            en = f"Who {en_v} {p.en}?"
            ru = f"Кто {perf[0]} {p.ru['dat']}?"
            yield Pair(en, ru, "", (), (p.lemma, en_v))


@template("question_how_many", ("questions", "numbers", "cases"))
def _q_how_many():
    for p in people(("name", "relative")):
        for t in THINGS:
            en = f"How many {t.en_pl} does {p.en} have?"
            ru = f"Сколько {t.pl['gen']} у {p.ru['gen']}?"
            yield Pair(en, ru, "", (), (p.lemma, t.en))


@template("question_why_went", ("questions", "cases", "past_agreement"))
def _q_why():
    for p in people(("name", "relative")):
        for pl in PLACES:
            en = f"Why did {p.en} go to the {pl.en}?"
            ru = f"Почему {p.ru['nom']} {GO[p.gender]} {pl.prep} {pl.forms['acc']}?"
            yield Pair(en, ru, "", (), (p.lemma, pl.en))


@template("question_when_back", ("questions", "cases"))
def _q_when():
    for p in people(("name", "relative")):
        for pl in PLACES:
            en = f"When will {p.en} come back from the {pl.en}?"
            ru = f"Когда {p.ru['nom']} вернётся {pl.gen_prep} {pl.forms['gen']}?"
            yield Pair(en, ru, "", (), (p.lemma, pl.en))


@template("question_where_thing", ("questions", "adjective_agreement"))
def _q_where_thing():
    for t in map(THING.get, ADJ_THINGS):
        for adj in ADJ:
            for number in ("sg", "pl"):
                if number == "sg":
                    en = f"Where is the {adj} {t.en}?"
                    ru = f"Где {ADJ[adj][t.gender]['nom']} {t.sg['nom']}?"
                else:
                    en = f"Where are the {adj} {t.en_pl}?"
                    ru = f"Где {ADJ[adj]['pl']['nom']} {t.pl['nom']}?"
                yield Pair(en, ru, "", (), (t.en, adj))


@template("question_did_say", ("questions", "gender", "past_agreement"), clauses=2)
def _q_did_say():
    for p in people(("profession",)):
        for st in STATES:
            en = f"Did {p.en} say {PRONOUN[p.gender]} was {st[0]}?"
            said = {"m": "сказал", "f": "сказала"}[p.gender]
            ru = f"{cap(p.ru['nom'])} {said}, что {st[1 + GN[p.gender]]}?"
            wrong = f"{cap(p.ru['nom'])} {said}, что {st[1 + GN[flip(p.gender)]]}?"
            yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p),
                       broken(ru, wrong, "past_agreement"))


# ---- adjective agreement in several cases

@template("bought_adjective_thing", ("adjective_agreement", "cases", "past_agreement"))
def _bought_adj():
    bought = {"m": "купил", "f": "купила"}
    for p in people(("name",)):
        for adj in ADJ:
            for t in map(THING.get, ADJ_THINGS):
                en = f"{p.en} bought {an(adj)} {adj} {t.en}."
                ru = f"{p.ru['nom']} {bought[p.gender]} {ADJ[adj][t.gender]['acc']} {t.sg['acc']}."
                wrong = {"m": "f", "f": "m", "n": "f"}[t.gender]
                broken = (f"{p.ru['nom']} {bought[p.gender]} {ADJ[adj][wrong]['acc']} "
                          f"{t.sg['acc']}.", "adjective_agreement")
                yield Pair(en, ru, "", (), (adj, t.en), (), (broken,))


@template("adjective_thing_on_table", ("adjective_agreement",))
def _adj_on_table():
    for adj in ADJ:
        for t in THINGS:
            if t.en not in ADJ_THINGS_ON_TABLE:
                continue
            en = f"The {adj} {t.en} is on the table."
            ru = f"{cap(ADJ[adj][t.gender]['nom'])} {t.sg['nom']} лежит на столе."
            wrong = f"{cap(ADJ[adj][WRONG_GENDER[t.gender]]['nom'])} {t.sg['nom']} лежит на столе."
            yield Pair(en, ru, "", (), (adj, t.en), (), broken(ru, wrong, "adjective_agreement"))
            en = f"The {adj} {t.en_pl} are on the table."
            ru = f"{cap(ADJ[adj]['pl']['nom'])} {t.pl['nom']} лежат на столе."
            yield Pair(en, ru, "", (), (adj, t.en_pl))


@template("has_no_adjective_thing", ("adjective_agreement", "negation", "cases"))
def _no_adj():
    for p in people(("name",)):
        for adj in ADJ:
            for t in map(THING.get, ADJ_THINGS):
                if odd_owner(p, t):
                    continue
                en = f"{p.en} has no {adj} {t.en}."
                ru = f"У {p.ru['gen']} нет {ADJ[adj][t.gender]['gen']} {t.sg['gen']}."
                wrong = (f"У {p.ru['gen']} нет {ADJ[adj][WRONG_GENDER[t.gender]]['gen']} "
                         f"{t.sg['gen']}.")
                yield Pair(en, ru, "", (), (adj, t.en), (),
                           broken(ru, wrong, "adjective_agreement"))


@template("talks_about_adjective_thing", ("adjective_agreement", "cases"))
def _about_adj():
    for p in people(("name", "relative")):
        for adj in ADJ:
            for t in map(THING.get, ADJ_THINGS):
                en = f"{cap(p.en)} is talking about the {adj} {t.en}."
                ru = f"{cap(p.ru['nom'])} говорит о {ADJ[adj][t.gender]['loc']} {t.sg['loc']}."
                wrong = (f"{cap(p.ru['nom'])} говорит о "
                         f"{ADJ[adj][WRONG_GENDER[t.gender]]['loc']} {t.sg['loc']}.")
                yield Pair(en, ru, "", (), (adj, t.en), (),
                           broken(ru, wrong, "adjective_agreement"))


@template("came_with_adjective_thing", ("adjective_agreement", "cases", "past_agreement"))
def _with_adj():
    came = {"m": "пришёл", "f": "пришла"}
    for p in people(("name", "relative")):
        for adj in ADJ:
            for t in THINGS:
                if t.en not in CARRIED:
                    continue
                en = f"{cap(p.en)} came with {an(adj)} {adj} {t.en}."
                adj_ins = ADJ[adj][t.gender]["ins"]
                ru = (f"{cap(p.ru['nom'])} {came[p.gender]} {with_(adj_ins)} {adj_ins} "
                      f"{t.sg['ins']}.")
                yield Pair(en, ru, "", (), (adj, t.en))


@template("went_to_adjective_place", ("adjective_agreement", "cases", "past_agreement"))
def _went_adj_place():
    for p in people(("name", "relative")):
        for adj in ("new", "old", "big", "small"):
            for pl in PLACES:
                en = f"{cap(p.en)} went to the {adj} {pl.en}."
                ru = (f"{cap(p.ru['nom'])} {GO[p.gender]} {pl.prep} "
                      f"{ADJ[adj][pl.gender]['acc']} {pl.forms['acc']}.")
                yield Pair(en, ru, "", (), (adj, pl.en))


@template("works_at_adjective_place", ("adjective_agreement", "cases"))
def _works_adj_place():
    for p in people(("name", "relative")):
        for adj in ("new", "old", "big", "small"):
            for pl in PLACES:
                en = f"{cap(p.en)} works at the {adj} {pl.en}."
                ru = (f"{cap(p.ru['nom'])} работает {pl.prep} "
                      f"{ADJ[adj][pl.gender]['loc']} {pl.forms['loc']}.")
                wrong = (f"{cap(p.ru['nom'])} работает {pl.prep} "
                         f"{ADJ[adj][WRONG_GENDER[pl.gender]]['loc']} {pl.forms['loc']}.")
                yield Pair(en, ru, "", (), (adj, pl.en), (),
                           broken(ru, wrong, "adjective_agreement"))


# ---- relative clauses

WHICH_ACC = {"m": "который", "f": "которую", "n": "которое", "pl": "которые"}
WHO_NOM = {"m": "который", "f": "которая"}


@template("this_is_thing_that_bought", ("relative_clause", "past_agreement",
                                        "adjective_agreement"), clauses=2)
def _this_is_thing():
    bought = {"m": "купил", "f": "купила"}
    for p in people(("name", "relative")):
        for t in map(THING.get, BUYABLE):
            en = f"This is the {t.en} that {p.en} bought yesterday."
            ru = f"Это {t.sg['nom']}, {WHICH_ACC[t.gender]} {p.ru['nom']} вчера {bought[p.gender]}."
            wrong = (f"Это {t.sg['nom']}, {WHICH_ACC[WRONG_GENDER[t.gender]]} {p.ru['nom']} "
                     f"вчера {bought[p.gender]}.")
            yield Pair(en, ru, "", (), (p.lemma, t.en), (), broken(ru, wrong, "relative_clause"))


@template("relative_who_lost_called", ("relative_clause", "gender", "past_agreement", "cases"),
          clauses=2, cap_=800)
def _who_lost_called():
    for p in people(("profession",)):
        for en_v, ru_v in LOSE_VERBS[:3]:
            for t in THINGS:
                if t.en not in SMALL_THINGS:
                    continue
                for rel in ("mother", "father", "sister", "brother"):
                    _, rf = relative_forms(rel)
                    en = (f"{cap(p.en)} who {en_v} {POSSESSIVE[p.gender]} {t.en} called "
                          f"{POSSESSIVE[p.gender]} {rel}.")
                    g = GN[p.gender]
                    ru = (f"{cap(p.ru['nom'])}, {WHO_NOM[p.gender]} {ru_v[g]} {SVOY[t.gender]} "
                          f"{t.sg['acc']}, {DATIVE_VERBS[0][3][g]} {rf['dat']}.")
                    yield Pair(en, ru, "", (), (p.lemma, t.en), sysf(p))


# Cues that can only refer to the person they follow ("who lost her way"; not "who lost her
# book", where "her" could be the subject's): en with {self}/{poss}, Russian m, f.
SELF_CUES = [
    ("lost {poss} way", "заблудился", "заблудилась"),
    ("changed {poss} mind", "передумал", "передумала"),
    ("introduced {self}", "представился", "представилась"),
    ("cut {self}", "порезался", "порезалась"),
]
REFLEXIVE = {"m": "himself", "f": "herself"}


def self_cue(en: str, gender: str) -> str:
    return en.format(poss=POSSESSIVE[gender], self=REFLEXIVE[gender])


@template("called_profession_who", ("relative_clause", "gender", "cases", "past_agreement"),
          clauses=2)
def _called_profession_who():
    """A profession in the dative, its gender decided by a pronoun at the end."""
    called = {"m": "позвонил", "f": "позвонила"}
    for a in people(("name", "relative")):
        for p in people(("profession",)):
            for cue in SELF_CUES:
                g = GN[p.gender]
                en = f"{cap(a.en)} called {p.en} who {self_cue(cue[0], p.gender)}."
                ru = (f"{cap(a.ru['nom'])} {called[a.gender]} {p.ru['dat']}, "
                      f"{WHO_NOM[p.gender]} {cue[1 + g]}.")
                yield Pair(en, ru, "", (), (p.lemma, cue[0]))


@template("met_profession_who", ("relative_clause", "gender", "cases", "past_agreement"),
          clauses=2)
def _met_profession_who():
    """A profession in the (animate) accusative, its gender decided by a later pronoun."""
    met = {"m": "встретил", "f": "встретила"}
    for a in people(("name", "relative")):
        for p in people(("profession",)):
            for cue in SELF_CUES:
                g = GN[p.gender]
                en = f"{cap(a.en)} met {p.en} who {self_cue(cue[0], p.gender)}."
                ru = (f"{cap(a.ru['nom'])} {met[a.gender]} {p.ru['acc']}, "
                      f"{WHO_NOM[p.gender]} {cue[1 + g]}.")
                yield Pair(en, ru, "", (), (p.lemma, cue[0]))


@template("this_is_relative_who", ("relative_clause", "past_agreement"), clauses=2)
def _this_is_relative_who():
    for rel, g, forms in RELATIVES:
        rf = declension(forms)
        for v, (en_o, ru_o) in _objects():
            en = f"This is my {rel}, who {v.en_past} {en_o} yesterday."
            ru = f"Это {MY[g]['nom']} {rf['nom']}, {WHO_NOM[g]} вчера {v.perf[GN[g]]} {ru_o}."
            yield Pair(en, ru, "", (), (rel, v.en_base))


# ---- two clauses

STAYED = {"m": "остался", "f": "осталась"}


@template("stayed_home_because", ("two_clauses", "gender", "past_agreement"), clauses=2)
def _stayed_because():
    for p in people(("profession", "name")):
        for st in STATES:
            if st[0] not in ("tired", "ill", "cold"):
                continue
            g = GN[p.gender]
            en = f"{cap(p.en)} stayed at home because {PRONOUN[p.gender]} was {st[0]}."
            ru = f"{cap(p.ru['nom'])} {STAYED[p.gender]} дома, потому что {st[1 + g]}."
            wrong = (f"{cap(p.ru['nom'])} {STAYED[p.gender]} дома, потому что "
                     f"{st[1 + GN[flip(p.gender)]]}.")
            yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p), broken(ru, wrong, "gender"))


WORK = [("finished the report", ("закончил", "закончила"), "отчёт"),
        ("wrote the letter", ("написал", "написала"), "письмо"),
        ("cooked dinner", ("приготовил", "приготовила"), "ужин"),
        ("cleaned the kitchen", ("убрал", "убрала"), "кухню")]
TIRED = [("tired", "устал", "устала"), ("ill", "болел", "болела"),
         ("cold", "замёрз", "замёрзла"), ("busy", "был занят", "была занята")]


@template("was_tired_but_finished", ("two_clauses", "gender", "past_agreement"), clauses=2)
def _tired_but():
    for p in people(("profession",)):
        for en_s, m_s, f_s in TIRED:
            for en_w, ru_w, obj in WORK:
                g = GN[p.gender]
                en = f"{cap(p.en)} was {en_s}, but {PRONOUN[p.gender]} {en_w}."
                ru = f"{cap(p.ru['nom'])} {(m_s, f_s)[g]}, но {ru_w[g]} {obj}."
                wrong = f"{cap(p.ru['nom'])} {(m_s, f_s)[g]}, но {ru_w[1 - g]} {obj}."
                yield Pair(en, ru, "", (), (p.lemma, en_s), sysf(p),
                           broken(ru, wrong, "past_agreement"))


@template("when_came_home_was_cooking", ("two_clauses", "aspect", "past_agreement"),
          clauses=2)
def _when_came_home():
    came = {"m": "пришёл", "f": "пришла"}
    for a in people(("name",)):
        for b in people(("name", "relative")):
            if a.lemma == b.lemma:
                continue
            for v in VERBS:
                if v.en_base not in EN_ING:
                    continue
                en_o, ru_o = v.objects[0]
                en = f"When {a.en} came home, {b.en} was {EN_ING[v.en_base]} {en_o}."
                ru = (f"Когда {a.ru['nom']} {came[a.gender]} домой, {b.ru['nom']} "
                      f"{v.impf[GN[b.gender]]} {ru_o}.")
                yield Pair(en, ru, "", (), (a.lemma, b.lemma))


@template("bought_and_cooked", ("two_clauses", "past_agreement"), clauses=2)
def _bought_and():
    bought = {"m": "купил", "f": "купила"}
    cooked = {"m": "приготовил", "f": "приготовила"}
    for a in people(("name",)):
        for b in people(("name", "relative")):
            if a.lemma == b.lemma:
                continue
            for f in FOOD[:8]:
                en = f"{a.en} bought {f[0]}, and {b.en} cooked dinner."
                ru = (f"{a.ru['nom']} {bought[a.gender]} {f[3]}, а {b.ru['nom']} "
                      f"{cooked[b.gender]} ужин.")
                yield Pair(en, ru, "", (), (a.lemma, f[0]))


# ---- test_longer: more clauses than any training sentence

@template("said_state_but_finished", ("gender", "past_agreement", "two_clauses"), clauses=3,
          cap_=300, longer=True)
def _longer_said_but():
    for p in people(("profession",)):
        for st in STATES[:6]:
            for en_w, ru_w, obj in WORK:
                g = GN[p.gender]
                said = ("сказал", "сказала")[g]
                en = (f"{cap(p.en)} said {PRONOUN[p.gender]} was {st[0]}, but "
                      f"{PRONOUN[p.gender]} {en_w}.")
                ru = f"{cap(p.ru['nom'])} {said}, что {st[1 + g]}, но {ru_w[g]} {obj}."
                yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p))


@template("when_came_home_said", ("gender", "past_agreement", "two_clauses"), clauses=3,
          cap_=300, longer=True)
def _longer_when_said():
    came = {"m": "пришёл", "f": "пришла"}
    for p in people(("profession",)):
        for st in STATES:
            g = GN[p.gender]
            pron = PRONOUN[p.gender]
            en = f"When {p.en} came home, {pron} said {pron} was {st[0]}."
            ru = (f"Когда {p.ru['nom']} {came[p.gender]} домой, {RU_PRONOUN[p.gender]} "
                  f"{('сказал', 'сказала')[g]}, что {st[1 + g]}.")
            yield Pair(en, ru, "", (), (p.lemma, st[0]), sysf(p))


@template("who_lost_said_state", ("relative_clause", "gender", "past_agreement"), clauses=3,
          cap_=300, longer=True)
def _longer_who_lost_said():
    for p in people(("profession",)):
        for en_v, ru_v in LOSE_VERBS[:3]:
            for t in map(THING.get, SMALL_THINGS):
                for st in STATES[:6]:
                    g = GN[p.gender]
                    en = (f"{cap(p.en)} who {en_v} {POSSESSIVE[p.gender]} {t.en} said "
                          f"{PRONOUN[p.gender]} was {st[0]}.")
                    ru = (f"{cap(p.ru['nom'])}, {WHO_NOM[p.gender]} {ru_v[g]} {SVOY[t.gender]} "
                          f"{t.sg['acc']}, {('сказал', 'сказала')[g]}, что {st[1 + g]}.")
                    yield Pair(en, ru, "", (), (p.lemma, t.en, st[0]), sysf(p))


@template("who_lost_stayed_because", ("relative_clause", "two_clauses", "gender",
                                      "past_agreement"), clauses=3, cap_=300, longer=True)
def _longer_who_lost_stayed():
    for p in people(("profession",)):
        for en_v, ru_v in LOSE_VERBS[:3]:
            for t in THINGS:
                if t.en not in SMALL_THINGS:
                    continue
                for st in ("tired", "ill", "cold"):
                    s = next(x for x in STATES if x[0] == st)
                    g = GN[p.gender]
                    en = (f"{cap(p.en)} who {en_v} {POSSESSIVE[p.gender]} {t.en} stayed at home "
                          f"because {PRONOUN[p.gender]} was {st}.")
                    ru = (f"{cap(p.ru['nom'])}, {WHO_NOM[p.gender]} {ru_v[g]} {SVOY[t.gender]} "
                          f"{t.sg['acc']}, {STAYED[p.gender]} дома, потому что {s[1 + g]}.")
                    yield Pair(en, ru, "", (), (p.lemma, t.en), sysf(p))


# =============================================================== building the splits


def generate_all() -> dict[str, list[Pair]]:
    """Every template's pairs, subsampled to about its cap; structure and phenomena set.

    The subsample takes sentences in SHA-256 order until the cap is reached, so every cell of
    a template (adjective x gender of the noun, say) keeps its share; a profession's masculine
    and feminine twins are taken together (they differ only in she/he, her/his), and the
    course pair and its twin are always taken.
    """
    names = [t.name for t in TEMPLATES]
    if len(names) != len(set(names)):
        raise ValueError("duplicate template name")
    out = {}
    for t in TEMPLATES:
        pairs = []
        seen = set()
        for p in t.generate():
            p.structure, p.phenomena = t.name, t.phenomena
            if p.en in seen:
                raise ValueError(f"{t.name}: duplicate English sentence {p.en!r}")
            seen.add(p.en)
            pairs.append(p)
        by_twins = defaultdict(list)
        for p in pairs:
            by_twins[twin_key(p.en)].append(p)
        must = {twin_key(p.en) for p in pairs if (p.en, p.ru) in (COURSE_PAIR, COURSE_TWIN)}
        keep = [p for group in sorted(must) for p in by_twins[group]]
        for group in sorted(by_twins, key=lambda g: key(t.name, g)):
            if len(keep) >= t.cap:
                break
            if group not in must:
                keep.extend(by_twins[group])
        out[t.name] = sorted(keep, key=lambda p: key(t.name, p.en))
    return out


RU_WORD = re.compile(r"[А-Яа-яЁё-]+")
GENDERED = re.compile(r"\b(she|he|her|his|herself|himself)\b")


def twin_key(en: str) -> str:
    """The English sentence with its gendered pronouns blanked: the same for both twins."""
    return GENDERED.sub("_", en)


def ru_forms(text: str) -> list[str]:
    """The Russian word forms of a sentence, lower-cased (sentence-initial capitals aside)."""
    return [w.lower() for w in RU_WORD.findall(text)]


@dataclass
class Corpus:
    splits: dict = field(default_factory=dict)  # name -> list[Pair]
    agreement: list = field(default_factory=list)  # (en, ru, ru_broken, phenomenon)
    agreement_pairs: list = field(default_factory=list)  # the same, as Pair (with structure)


SYSTEMATIC_FORMS = systematic_forms()


def systematic(pair: Pair) -> bool:
    """True if the pair holds a form only test_systematic may hold."""
    return any(f in SYSTEMATIC_FORMS for f in ru_forms(pair.ru))


MIN_STRUCTURE_COUNT = 5  # ... and this often in train in the same structure (the same role)
HELD_OUT_SHARE = 0.06  # the share of each structure's key combinations held out for testing
VALID_SHARE = 0.04
AGREEMENT_SHARE = 0.5  # of the held-out pairs that have a broken twin


def build_splits() -> Corpus:
    by_template = generate_all()
    corpus = Corpus({name: [] for name in SPLITS})
    candidates_comb: list[Pair] = []
    agreement_pool: list[Pair] = []
    course_combos = {("said_state", ("researcher", "exhausted"))}
    for t in TEMPLATES:
        pairs = by_template[t.name]
        if t.longer:  # a held-out feminine in a longer sentence: test_systematic
            for p in pairs:
                split = "test_systematic" if systematic(p) else "test_longer"
                corpus.splits[split].append(p)
            continue
        combos = sorted({p.combo for p in pairs}, key=lambda c: key(t.name, *c))
        n_held = max(1, round(HELD_OUT_SHARE * len(combos)))
        held = set(combos[:n_held]) | {c for n, c in course_combos if n == t.name}
        for p in pairs:
            if systematic(p):
                corpus.splits["test_systematic"].append(p)
            elif p.combo in held:
                candidates_comb.append(p)
            elif int(key("valid", p.en)[:8], 16) / 16**8 < VALID_SHARE:
                corpus.splits["valid"].append(p)
            else:
                corpus.splits["train"].append(p)
    # test_combinations (and test_agreement): every Russian form seen >= MIN_TRAIN_COUNT
    # times in train, and >= MIN_STRUCTURE_COUNT times in train in the same structure, so
    # that a form is known in its role (большой as a feminine prepositional, not only as a
    # masculine nominative); else the whole combination goes to train
    counts = Counter(f for p in corpus.splits["train"] for f in ru_forms(p.ru))
    in_structure = Counter((p.structure, f) for p in corpus.splits["train"] for f in ru_forms(p.ru))
    rare = {(p.structure, p.combo) for p in candidates_comb
            if any(counts[f] < MIN_TRAIN_COUNT or in_structure[p.structure, f] < MIN_STRUCTURE_COUNT
                   for f in ru_forms(p.ru))}
    for p in candidates_comb:
        if (p.structure, p.combo) in rare:  # not a fair test: trained on instead
            corpus.splits["train"].append(p)
        else:
            if p.broken and int(key("agree", p.en)[:8], 16) / 16**8 < AGREEMENT_SHARE and \
                    (p.en, p.ru) not in (COURSE_PAIR, COURSE_TWIN):
                agreement_pool.append(p)
            else:
                corpus.splits["test_combinations"].append(p)
    corpus.agreement_pairs = sorted(agreement_pool, key=lambda p: key(AGREEMENT_SPLIT, p.en))
    for p in corpus.agreement_pairs:
        ru_broken, phenomenon = p.broken[0]
        corpus.agreement.append((p.en, p.ru, ru_broken, phenomenon))
    # test_longer keeps only sentences whose words all occur in train
    known = set(counts)
    corpus.splits["test_longer"] = [p for p in corpus.splits["test_longer"]
                                    if all(f in known for f in ru_forms(p.ru))
                                    and not systematic(p)]
    for name in SPLITS:
        corpus.splits[name].sort(key=lambda p: key(name, p.en))
    corpus.agreement.sort(key=lambda row: key(AGREEMENT_SPLIT, row[0]))
    return corpus


# =============================================================== tokenizer and files


def train_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """The course tokenizer's recipe (tfs.bpe, as scripts/build_data.py) on the distinct texts."""
    return train_course_tokenizer(set(texts), vocab_size, MIN_PAIR_FREQUENCY)


def write_tsv(path: Path, header: str, rows) -> None:
    lines = [header] + ["\t".join(row) for row in rows]
    for line in lines:
        if "\n" in line or line.count("\t") != header.count("\t"):
            raise ValueError(f"bad row {line!r}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def build(out_dir: Path = OUT_DIR) -> Corpus:
    corpus = build_splits()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = [s for name in SPLITS for p in corpus.splits[name] for s in (p.en, p.ru)]
    texts += [row[2] for row in corpus.agreement] + [s for row in corpus.agreement
                                                     for s in row[:2]]
    # The tokenizer learns from train only (held-out words are still spelled out of subwords).
    train_texts = [s for p in corpus.splits["train"] for s in (p.en, p.ru)]
    tokenizer = train_tokenizer(train_texts)
    check_round_trip(tokenizer, texts)
    for name in SPLITS:
        rows = [(p.en, p.ru, p.structure, ",".join(p.phenomena)) for p in corpus.splits[name]]
        write_tsv(out_dir / f"{name}.tsv", HEADER, rows)
    write_tsv(out_dir / f"{AGREEMENT_SPLIT}.tsv", "en\tru\tru_broken\tphenomenon",
              corpus.agreement)
    (out_dir / "tokenizer.json").write_text(tokenizer.to_str(pretty=True) + "\n",
                                            encoding="utf-8")
    return corpus


def statistics(corpus: Corpus, tokenizer: Tokenizer | None = None) -> str:
    """The numbers the card gives: split sizes, structures, words, forms, phenomena."""
    lines = []
    total = 0
    for name in SPLITS:
        n = len(corpus.splits[name])
        total += n
        lines.append(f"{name:>18}: {n:,} pairs, {len({p.structure for p in corpus.splits[name]})}"
                     " structures")
    lines.append(f"{AGREEMENT_SPLIT:>18}: {len(corpus.agreement):,} contrastive pairs")
    all_pairs = [p for name in SPLITS for p in corpus.splits[name]]
    train = corpus.splits["train"]
    en_words = {w.lower() for p in all_pairs for w in re.findall(r"[A-Za-z'-]+", p.en)}
    ru_words = {f for p in all_pairs for f in ru_forms(p.ru)}
    train_forms = Counter(f for p in train for f in ru_forms(p.ru))
    lines.append(f"total {total:,} pairs (+ {len(corpus.agreement):,} contrastive), "
                 f"{len({p.structure for p in all_pairs})} structures "
                 f"({len({p.structure for p in train})} in train), {len(en_words)} English words, "
                 f"{len(ru_words)} Russian forms ({len(train_forms)} in train, "
                 f"{sum(n >= 20 for n in train_forms.values())} of them 20+ times)")
    lengths = Counter(len(p.en.split()) for p in train)
    lines.append(f"English words per training sentence: {min(lengths)} to {max(lengths)}, "
                 f"mean {sum(k * n for k, n in lengths.items()) / len(train):.1f}")
    tags = Counter(tag for p in train for tag in p.phenomena)
    lines.append("training pairs per phenomenon: " +
                 ", ".join(f"{tag} {tags[tag]:,}" for tag in PHENOMENA))
    if tokenizer is not None:
        ru = sum(len(tokenizer.encode(p.ru).ids) for p in train) / len(train)
        en = sum(len(tokenizer.encode(p.en).ids) for p in train) / len(train)
        lines.append(f"tokenizer: {tokenizer.get_vocab_size():,} tokens; tokens per training "
                     f"sentence: en {en:.1f}, ru {ru:.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--sample", type=int, default=0,
                        help="print this many random pairs (fixed seed) and exit")
    parser.add_argument("--seed", default="review")
    args = parser.parse_args(argv)
    if args.sample:
        corpus = build_splits()
        pairs = [p for name in SPLITS for p in corpus.splits[name]]
        pairs.sort(key=lambda p: key(args.seed, p.en))
        for p in pairs[: args.sample]:
            print(f"{p.en}\n    {p.ru}    [{p.structure}]")
        return 0
    corpus = build(args.out)
    print(statistics(corpus, Tokenizer.from_file(str(Path(args.out) / "tokenizer.json"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
